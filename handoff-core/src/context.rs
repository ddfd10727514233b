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

use crate::record::Handoff;
use crate::redact::Redactor;

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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// `user`, `assistant`, `tool`, `system`.
    pub role: String,
    /// The text.
    pub content: String,
    /// Tool calls the message made, as the provider sent them.
    #[serde(default)]
    pub tool_calls: Vec<serde_json::Value>,
    /// When it was said.
    #[serde(default)]
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
            let mut text = message.content;
            for call in &message.tool_calls {
                text.push_str("\n[tool call] ");
                text.push_str(&call.to_string());
            }
            let id = message.id.unwrap_or_else(|| format!("message-{n}"));
            let item = self.push(
                ItemKind::Message,
                id,
                "",
                text,
                message.priority.unwrap_or(50),
            );
            item.title.clone_from(&message.role);
            item.role = Some(message.role);
            item.at = message.at;
        }
        self
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
        for (index, item) in self.items.iter().enumerate() {
            let mut text = item.text.as_str();
            if let Some(redactor) = &self.redactor {
                let found = redactor.find(&item.text);
                if !found.is_empty() {
                    let clean = crate::redact::replace(&item.text, &found);
                    let mut rules: Vec<&str> = found.iter().map(|r| r.rule.as_str()).collect();
                    rules.sort_unstable();
                    for chunk in rules.chunk_by(|a, b| a == b) {
                        manifest.redacted.push(RedactedItem {
                            id: item.id.clone(),
                            rule: chunk[0].to_owned(),
                            count: chunk.len(),
                        });
                    }
                    text = redacted.entry(index).or_insert(clean);
                }
            }
            tokens.push(self.cost(&item.title, text));
        }
        let candidate = |index: usize, redacted: &mut HashMap<usize, String>| {
            let item = &self.items[index];
            Candidate {
                index,
                item,
                text: redacted
                    .remove(&index)
                    .map_or(Cow::Borrowed(item.text.as_str()), Cow::Owned),
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
            let mut c = candidate(index, &mut redacted);
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
            let c = candidate(index, &mut redacted);
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
    tokens: usize,
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
                    md.push_str(&format!("**{role}:** {}\n\n", section.text.trim()));
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

    /// The packet as chat messages: everything but the conversation in one system message,
    /// then the conversation's messages with their roles.
    pub fn to_messages(&self) -> Vec<serde_json::Value> {
        let briefing = Packet {
            sections: self
                .sections
                .iter()
                .filter(|s| s.kind != ItemKind::Message)
                .cloned()
                .collect(),
            ..self.clone()
        };
        let mut messages = vec![
            serde_json::json!({"role": "system", "content": briefing.to_markdown().trim_end()}),
        ];
        messages.extend(
            self.sections
                .iter()
                .filter(|s| s.kind == ItemKind::Message)
                .map(|s| serde_json::json!({"role": s.role.as_deref().unwrap_or("user"), "content": s.text})),
        );
        messages
    }

    /// The packet as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
