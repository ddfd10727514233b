//! The context builder: what a successor reads, within a token budget, with secrets redacted
//! and a manifest of everything included, truncated, dropped and redacted.
//!
//! Mandatory sections (goal, pending steps, instructions, blockers) are always present, cut
//! with a visible marker if they must be. Everything else is chosen by priority, then
//! recency (newest first), then insertion order, so the same input always gives the same
//! packet. Nothing is dropped without an entry in the manifest.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::messages::{self, ToolCall};
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
pub enum ItemKind {
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
}

/// One piece of content in the packet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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
}

/// What happened to every item offered to the builder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Manifest {
    /// Ids included whole.
    pub included: Vec<String>,
    /// Items included in part.
    pub truncated: Vec<Truncation>,
    /// Items left out.
    pub dropped: Vec<Dropped>,
    /// Secrets replaced, by item and rule.
    pub redacted: Vec<RedactedItem>,
}

/// An item included in part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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
pub enum DropReason {
    /// No room was left in the budget.
    Budget,
}

/// Secrets replaced in one item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RedactedItem {
    /// The item.
    pub id: String,
    /// The rule that matched.
    pub rule: String,
    /// How many times.
    pub count: usize,
}

/// The successor's context: sections within the budget, and the manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Packet {
    /// Mandatory sections first, then the rest by kind, messages in chronological order.
    pub sections: Vec<Section>,
    /// Tokens used, counted with the builder's tokenizer.
    pub tokens: usize,
    /// The budget it was built for.
    pub budget: usize,
    /// What was included, truncated, dropped and redacted.
    pub manifest: Manifest,
}

/// Marks text cut to fit the budget.
const CUT_MARKER: &str = " … [truncated]";

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
    budget: usize,
    redactor: Option<Redactor>,
    tokenizer: Box<dyn Tokenizer>,
    items: Vec<Item>,
}

impl std::fmt::Debug for ContextBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextBuilder")
            .field("budget", &self.budget)
            .field("redact", &self.redactor.is_some())
            .field("items", &self.items.len())
            .finish()
    }
}

impl ContextBuilder {
    /// A builder for `budget_tokens`, redacting with the built-in rules, counting with
    /// [`EstimateTokenizer`].
    pub fn new(budget_tokens: usize) -> Self {
        ContextBuilder {
            budget: budget_tokens,
            redactor: Some(Redactor::default()),
            tokenizer: Box::new(EstimateTokenizer),
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
        });
        let last = self.items.len() - 1;
        &mut self.items[last]
    }

    /// Adds a handoff record: goal, pending steps, instructions and blockers are mandatory;
    /// the other sections compete by priority.
    pub fn add_handoff(&mut self, h: &Handoff) -> &mut Self {
        let list = |items: &[String]| {
            items
                .iter()
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let mut sections: Vec<(&str, &str, String, i32, bool)> = vec![
            ("goal", "Current Goal", h.goal.clone(), 100, true),
            (
                "pending_steps",
                "Pending",
                list(&h.pending_steps),
                100,
                true,
            ),
            (
                "instructions",
                "Instructions",
                h.instructions.clone().unwrap_or_default(),
                100,
                true,
            ),
            ("blockers", "Blockers", list(&h.blockers), 100, true),
        ];
        sections.extend([
            (
                "progress_summary",
                "Progress",
                h.progress_summary.clone(),
                90,
                false,
            ),
            ("warnings", "Warnings", list(&h.warnings), 85, false),
            (
                "unresolved_errors",
                "Unresolved Errors",
                list(&h.unresolved_errors),
                85,
                false,
            ),
            (
                "key_decisions",
                "Key Decisions",
                list(&h.key_decisions),
                80,
                false,
            ),
            (
                "priority_items",
                "Priorities",
                list(&h.priority_items),
                80,
                false,
            ),
            (
                "success_criteria",
                "Success Criteria",
                list(&h.success_criteria),
                75,
                false,
            ),
            (
                "assumptions",
                "Assumptions",
                list(&h.assumptions),
                70,
                false,
            ),
            (
                "completed_steps",
                "Completed",
                list(&h.completed_steps),
                60,
                false,
            ),
        ]);
        let files: Vec<String> = h
            .modified_files
            .iter()
            .map(|f| format!("modified: {f}"))
            .chain(h.locked_files.iter().map(|f| format!("locked: {f}")))
            .collect();
        sections.push(("files", "Files", list(&files), 55, false));
        for (field, title, text, priority, mandatory) in sections {
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
            item.at = Some(h.created_at);
        }
        self
    }

    /// Adds conversation messages.
    pub fn add_messages(&mut self, messages: impl IntoIterator<Item = Message>) -> &mut Self {
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

    /// Builds the packet.
    pub fn build(&self) -> Packet {
        let mut manifest = Manifest::default();
        // One pass: each item's cost, and its redacted text when it had secrets. Items are only
        // borrowed; no per-item record is built beyond its cost, so a million items do not
        // allocate (and fault in) tens of megabytes of candidates on every build.
        let mut tokens: Vec<usize> = Vec::with_capacity(self.items.len());
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
            tokens.push(self.cost(&item.title, text) + self.calls_cost(calls));
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
                    tokens: tokens[index],
                }
            };

        // Mandatory items first, each cut to its share of what is left if they cannot all fit.
        let mut chosen: Vec<Candidate<'_>> = Vec::new();
        let mut left = self.budget;
        let mandatory: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].mandatory)
            .collect();
        let mandatory_total: usize = mandatory.iter().map(|&i| tokens[i]).sum();
        let count = mandatory.len();
        for (i, index) in mandatory.into_iter().enumerate() {
            let mut c = candidate(index, &mut redacted, &mut redacted_calls);
            let share = left / (count - i).max(1);
            if mandatory_total <= self.budget || c.tokens <= share {
                manifest.included.push(c.item.id.clone());
                left = left.saturating_sub(c.tokens);
                chosen.push(c);
                continue;
            }
            let original_tokens = c.tokens;
            let text = self.truncate(&c.item.title, &c.text, share);
            c.tokens = self.cost(&c.item.title, &text);
            c.text = Cow::Owned(text);
            manifest.truncated.push(Truncation {
                id: c.item.id.clone(),
                original_tokens,
                kept_tokens: c.tokens,
            });
            left = left.saturating_sub(c.tokens);
            chosen.push(c);
        }

        // The rest: by priority, then newest first, then the order they were added, each taken
        // if it still fits. Items of one cost are taken best first, and at most `left / cost`
        // of them can ever be taken, so each cost keeps only its best `left / cost` items (in a
        // bounded min-heap, filled in one pass); the others, and those that cost more than is
        // left, are dropped without being ordered. The next item taken is the best of the
        // costs that still fit: the same choice, in the same order, as ordering every item.
        let mut by_cost: BTreeMap<usize, BinaryHeap<Reverse<Rank>>> = BTreeMap::new();
        for (index, item) in self.items.iter().enumerate() {
            let cost = tokens[index];
            if item.mandatory || cost > left {
                continue;
            }
            // `cost` is at least 2 (a heading line), so this never divides by zero.
            let keep = left / cost.max(1);
            let rank = Reverse((item.priority, item.at, Reverse(index)));
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
            let Some((_, _, Reverse(index))) = ranks.pop() else {
                break;
            };
            if ranks.is_empty() {
                by_cost.remove(&cost);
            }
            let c = candidate(index, &mut redacted, &mut redacted_calls);
            left -= c.tokens;
            taken[index] = true;
            manifest.included.push(c.item.id.clone());
            chosen.push(c);
        }
        for (index, item) in self.items.iter().enumerate() {
            if !item.mandatory && !taken[index] {
                manifest.dropped.push(Dropped {
                    id: item.id.clone(),
                    tokens: tokens[index],
                    reason: DropReason::Budget,
                });
            }
        }

        // Render: mandatory first, then handoff sections, facts, the conversation in
        // chronological order, and notes.
        chosen.sort_by(|a, b| {
            b.item
                .mandatory
                .cmp(&a.item.mandatory)
                .then(a.item.kind.cmp(&b.item.kind))
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
            })
            .collect();
        Packet {
            tokens: sections.iter().map(|s| s.tokens).sum(),
            budget: self.budget,
            sections,
            manifest,
        }
    }

    /// What an item costs rendered: its heading line and its text.
    fn cost(&self, title: &str, text: &str) -> usize {
        self.tokenizer.count(title) + 2 + self.tokenizer.count(text)
    }

    /// What a message's tool calls cost: a line each, as [`ToolCall::to_text`] writes it.
    fn calls_cost(&self, calls: &[ToolCall]) -> usize {
        calls
            .iter()
            .map(|call| 1 + self.tokenizer.count(&call.to_text()))
            .sum()
    }

    /// `text` cut to cost at most `tokens` with its heading, ending in a visible marker.
    fn truncate(&self, title: &str, text: &str, tokens: usize) -> String {
        let fits = |end: usize| {
            let candidate = format!("{}{CUT_MARKER}", &text[..end]);
            (self.cost(title, &candidate) <= tokens).then_some(candidate)
        };
        // Binary search on the number of characters kept.
        let ends: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let (mut lo, mut hi) = (0usize, ends.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(ends.get(mid).copied().unwrap_or(text.len())).is_some() {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let end = ends.get(lo).copied().unwrap_or(text.len());
        fits(end).unwrap_or_else(|| CUT_MARKER.trim_start().to_owned())
    }
}

/// The order in which optional items are taken: priority, then time (newest first), then
/// insertion (earliest first, the item's index).
type Rank = (i32, Option<DateTime<Utc>>, Reverse<usize>);

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
    /// The packet as Markdown: one heading per section, the conversation as a transcript.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let mut in_conversation = false;
        for section in &self.sections {
            match (&section.role, section.kind) {
                (Some(role), ItemKind::Message) => {
                    if !in_conversation {
                        md.push_str("## Conversation\n\n");
                        in_conversation = true;
                    }
                    let mut text = section.text.trim().to_owned();
                    for call in &section.tool_calls {
                        text.push('\n');
                        text.push_str(&call.to_text());
                    }
                    match (&section.tool_call_id, role.as_str()) {
                        (Some(id), "tool") => {
                            md.push_str(&format!("**tool ({id}):** {}\n\n", text.trim()))
                        }
                        _ => md.push_str(&format!("**{role}:** {}\n\n", text.trim())),
                    }
                }
                _ => {
                    in_conversation = false;
                    md.push_str(&format!(
                        "## {}\n\n{}\n\n",
                        section.title,
                        section.text.trim()
                    ));
                }
            }
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
