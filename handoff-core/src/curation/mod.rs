//! Curation of agent memory (docs/design.md §9, seed: Day1 Phase 5), the pure part: branch names and
//! their parents, which messages of a conversation each kind of cherry-pick takes (a range, the
//! decision points by the seed's heuristics or a judge, the tool-call sequences), the
//! verification gate's thresholds and verdicts, and what a merge moves up. Like the handoff and
//! task machines, nothing here reads or writes a store: the store calls these and keeps what
//! they decide.
//!
//! Messages are the context builder's [`Message`]s, so a conversation can be given in any
//! provider's shape ([`crate::messages::normalize`]).
//!
//! The folder: this file is the pure part; `store` keeps conversations and facts in the
//! [`Store`](crate::Store), `ops` curation's operations.

pub(crate) mod ops;
pub(crate) mod store;

use std::collections::HashSet;
use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::Message;
use crate::error::{Error, Result};
use crate::messages::ToolCall;
use crate::validate::{Collector, is_ident};

/// The rule for branch names.
pub const BRANCH_RULE: &str = "must be `main`, `task/<task id>` or `task/<task id>/<agent>`, \
     the task id and the agent each 1 to 128 characters from A-Z a-z 0-9 . _ : @ -";

/// A branch of curated memory: `main`, a task's `task/<task id>`, or an agent's
/// `task/<task id>/<agent>`. A branch's parent is its name minus the last segment; `main` has
/// none.
///
/// ```
/// use handoff_core::curation::Branch;
///
/// let agent = Branch::parse("task/fix-oauth/agent-b")?;
/// assert_eq!(agent.task_id(), Some("fix-oauth"));
/// assert_eq!(agent.parent().unwrap().as_str(), "task/fix-oauth");
/// assert_eq!(agent.parent().unwrap().parent().unwrap().as_str(), "main");
/// assert!(Branch::parse("feature/x").is_err());
/// # Ok::<(), handoff_core::Error>(())
/// ```
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(try_from = "String", into = "String")]
pub struct Branch(String);

impl Branch {
    /// The `main` branch.
    pub fn main() -> Branch {
        Branch("main".to_owned())
    }

    /// Reads a branch name; anything but the three forms is a validation error naming
    /// `branch`.
    pub fn parse(name: &str) -> Result<Branch> {
        Branch::named("branch", name)
    }

    /// [`Branch::parse`], naming `field` in the error.
    pub fn named(field: &str, name: &str) -> Result<Branch> {
        let valid = name == "main"
            || name.strip_prefix("task/").is_some_and(|rest| {
                let mut parts = rest.split('/');
                let task_ok = parts.next().is_some_and(is_ident);
                let agent_ok = parts.next().is_none_or(is_ident);
                task_ok && agent_ok && parts.next().is_none()
            });
        if valid {
            Ok(Branch(name.to_owned()))
        } else {
            Err(Error::invalid(field, BRANCH_RULE))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The branch this one merges into: its name minus the last segment (`main` for a task's
    /// branch); `None` for `main`.
    pub fn parent(&self) -> Option<Branch> {
        let (parent, _) = self.0.rsplit_once('/')?;
        Some(if parent == "task" {
            Branch::main()
        } else {
            Branch(parent.to_owned())
        })
    }

    /// The task a `task/...` branch belongs to.
    pub fn task_id(&self) -> Option<&str> {
        self.0.strip_prefix("task/")?.split('/').next()
    }

    /// The branch of a task's shared knowledge.
    pub fn of_task(task_id: &str) -> Result<Branch> {
        Branch::named("task_id", &format!("task/{task_id}"))
    }
}

impl TryFrom<String> for Branch {
    type Error = Error;
    fn try_from(name: String) -> Result<Branch> {
        Branch::parse(&name)
    }
}

impl From<Branch> for String {
    fn from(branch: Branch) -> String {
        branch.0
    }
}

impl std::fmt::Display for Branch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The messages `from..=to` (1-based `seq`s) of a conversation of `len` messages; either end
/// may be left out (the first, the last). Every problem at once, named `from_seq` / `to_seq`.
pub fn seq_range(len: usize, from: Option<u64>, to: Option<u64>) -> Result<RangeInclusive<u64>> {
    let last = len as u64;
    if len == 0 {
        return Err(Error::invalid("conversation", "has no messages to pick"));
    }
    let mut c = Collector::default();
    let (from, to) = (from.unwrap_or(1), to.unwrap_or(last));
    if from == 0 || from > last {
        c.push("from_seq", format!("must be between 1 and {last}"));
    }
    if to == 0 || to > last {
        c.push("to_seq", format!("must be between 1 and {last}"));
    }
    if from > to {
        c.push("to_seq", "must not be before from_seq");
    }
    c.finish()?;
    Ok(from..=to)
}

/// Phrases by which an assistant states an approach (the seed's "I'll", "let me", "the
/// approach", "decided"), matched case-insensitively.
const APPROACH_PHRASES: &[&str] = &[
    "i'll ",
    "i will ",
    "let me ",
    "the approach",
    "my approach",
    "i decided",
    "decided to",
    "the decision",
    "i'm going to",
    "the plan is",
];

/// Words that say a tool failed, for results whose shape carries no error flag (an OpenAI
/// `tool` message): matched case-insensitively at the start of the result or as a traceback.
const FAILURE_MARKS: &[&str] = &["error", "failed", "failure", "exception", "fatal"];

/// Whether a tool result says its tool failed: the provider's flag, or an error at its start
/// or a traceback in it.
pub fn tool_failed(result: &Message) -> bool {
    if result.is_error {
        return true;
    }
    let text = result.content.trim_start().to_lowercase();
    FAILURE_MARKS.iter().any(|mark| text.starts_with(mark))
        || text.contains("traceback (most recent call last)")
}

/// Whether an assistant message states an approach.
fn states_an_approach(message: &Message) -> bool {
    let text = message.content.to_lowercase();
    APPROACH_PHRASES.iter().any(|phrase| text.contains(phrase))
}

fn is_assistant(message: &Message) -> bool {
    message.role == "assistant"
}

fn has_text(message: &Message) -> bool {
    !message.content.trim().is_empty()
}

/// Decides whether a message is a decision point, in place of the heuristics (an LLM judge):
/// `Ok(true)` takes it. An error stops the pick, which then writes nothing.
pub trait Judge {
    /// Whether `message` (the `index`-th of its conversation, from 0) is a decision point.
    fn is_decision(&mut self, index: usize, message: &Message) -> Result<bool>;
}

impl<F: FnMut(usize, &Message) -> Result<bool>> Judge for F {
    fn is_decision(&mut self, index: usize, message: &Message) -> Result<bool> {
        self(index, message)
    }
}

/// The indexes (from 0, in order) of a conversation's decision points. Without a judge, the
/// seed's heuristics pick assistant messages with text that
///
/// - state an approach ("I'll", "let me", "the approach", "decided", ...);
/// - come right after a tool that failed (the recovery decision: the first assistant message
///   with text after the failed result);
/// - lead to a tool call that succeeded (the right strategy): the message that made the call
///   when it has text, else the assistant message with text just before it, with no user turn
///   between.
///
/// With a judge, the judge decides for every message.
///
/// ```
/// use handoff_core::curation::decision_points;
/// use handoff_core::context::Message;
/// use serde_json::json;
///
/// let messages: Vec<Message> = serde_json::from_value(json!([
///     {"role": "user", "content": "fix the auth bug"},
///     {"role": "assistant", "content": "let me investigate the token check"},
///     {"role": "assistant", "content": "done"},
/// ]))?;
/// assert_eq!(decision_points(&messages, None)?, [1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decision_points(messages: &[Message], judge: Option<&mut dyn Judge>) -> Result<Vec<usize>> {
    if let Some(judge) = judge {
        let mut picked = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            if judge.is_decision(i, message)? {
                picked.push(i);
            }
        }
        return Ok(picked);
    }
    let mut picked = vec![false; messages.len()];
    let results = results_by_call(messages);
    let mut after_failure = false;
    let mut last_assistant_text: Option<usize> = None;
    for (i, message) in messages.iter().enumerate() {
        match message.role.as_str() {
            "tool" => after_failure |= tool_failed(message),
            "assistant" => {
                if has_text(message) && (states_an_approach(message) || after_failure) {
                    picked[i] = true;
                }
                if has_text(message) {
                    after_failure = false;
                }
                let succeeded = message.tool_calls.iter().any(|call| {
                    results
                        .iter()
                        .find(|(id, _)| !call.id.is_empty() && *id == call.id.as_str())
                        .is_some_and(|(_, result)| !tool_failed(&messages[*result]))
                });
                if succeeded {
                    if has_text(message) {
                        picked[i] = true;
                    } else if let Some(before) = last_assistant_text {
                        picked[before] = true;
                    }
                }
                last_assistant_text = has_text(message).then_some(i);
            }
            // A user turn starts a new exchange: what came before leads to no later call.
            _ => last_assistant_text = None,
        }
    }
    Ok(picked
        .iter()
        .enumerate()
        .filter_map(|(i, &p)| p.then_some(i))
        .collect())
}

/// Each tool result's call id and its index.
fn results_by_call(messages: &[Message]) -> Vec<(&str, usize)> {
    messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            (m.role == "tool")
                .then(|| m.tool_call_id.as_deref().map(|id| (id, i)))
                .flatten()
        })
        .collect()
}

/// The tool-call sequences of a conversation: for each assistant message that made tool
/// calls, its index and the indexes of the results answering them (by call id), in order. A
/// call whose result never came stays alone; a result nothing called is left out.
pub fn tool_sequences(messages: &[Message]) -> Vec<Vec<usize>> {
    let results = results_by_call(messages);
    let mut taken = HashSet::new();
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| is_assistant(m) && !m.tool_calls.is_empty())
        .map(|(i, m)| {
            let mut sequence = vec![i];
            for call in m.tool_calls.iter().filter(|call| !call.id.is_empty()) {
                for (id, result) in &results {
                    if *id == call.id && *result > i && taken.insert(*result) {
                        sequence.push(*result);
                    }
                }
            }
            sequence
        })
        .collect()
}

/// The seed's example conversation (Day1 Phase 5, §4.1) in OpenAI's chat shape: a bug found
/// and fixed in eleven messages (the seed's ten, each tool call answered by its result as the
/// API requires). Its decision points are messages 2, 5 and 8 (`seq`s), its tool sequences
/// 3–4, 6–7 and 8–9: what the heuristics are documented and tested on.
pub fn seed_example() -> Vec<Message> {
    let say = |role: &str, content: &str| Message {
        role: role.to_owned(),
        content: content.to_owned(),
        ..Message::default()
    };
    let call = |content: &str, id: &str, name: &str, arguments: serde_json::Value| Message {
        tool_calls: vec![ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments,
        }],
        ..say("assistant", content)
    };
    let result = |id: &str, content: &str| Message {
        tool_call_id: Some(id.to_owned()),
        ..say("tool", content)
    };
    vec![
        say("user", "fix the auth bug"),
        say("assistant", "let me investigate..."),
        call("", "c1", "Read", serde_json::json!({"path": "auth.py"})),
        result("c1", "def check_token(t): ..."),
        say(
            "assistant",
            "found the issue: the expiry is compared in seconds",
        ),
        call("", "c2", "Edit", serde_json::json!({"path": "auth.py"})),
        result("c2", "edited"),
        call(
            "fixed, let me test",
            "c3",
            "Bash",
            serde_json::json!({"cmd": "pytest"}),
        ),
        result("c3", "12 passed"),
        say("assistant", "all tests pass"),
        say("user", "thanks"),
    ]
}

/// The verification gate's thresholds (the seed's defaults: a fact is verified at 0.7 and
/// invalidated below 0.4; a conversation is verified at 0.6).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// A fact scoring at least this is verified.
    pub fact_threshold: f64,
    /// A fact or a conversation scoring below this is invalidated.
    pub invalidate_below: f64,
    /// A conversation scoring at least this is verified.
    pub conversation_threshold: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            fact_threshold: 0.7,
            invalidate_below: 0.4,
            conversation_threshold: 0.6,
        }
    }
}

/// The score every item gets when there is no verifier: neither verified nor invalidated.
pub const NEUTRAL_SCORE: f64 = 0.5;

impl Thresholds {
    /// Every problem at once: each between 0 and 1, and nothing invalidated that would also
    /// be verified.
    pub fn check(&self) -> Result<()> {
        let mut c = Collector::default();
        for (field, value) in [
            ("fact_threshold", self.fact_threshold),
            ("invalidate_below", self.invalidate_below),
            ("conversation_threshold", self.conversation_threshold),
        ] {
            if !(0.0..=1.0).contains(&value) {
                c.push(field, "must be a number from 0 to 1");
            }
        }
        if self.invalidate_below > self.fact_threshold
            || self.invalidate_below > self.conversation_threshold
        {
            c.push(
                "invalidate_below",
                "must not be above fact_threshold nor conversation_threshold",
            );
        }
        c.finish()
    }

    /// What a fact's score makes of it.
    pub fn fact_verdict(&self, score: f64) -> Verdict {
        self.verdict(score, self.fact_threshold)
    }

    /// What a conversation's score makes of it.
    pub fn conversation_verdict(&self, score: f64) -> Verdict {
        self.verdict(score, self.conversation_threshold)
    }

    fn verdict(&self, score: f64, verified_at: f64) -> Verdict {
        if score >= verified_at {
            Verdict::Verified
        } else if score < self.invalidate_below {
            Verdict::Invalidated
        } else {
            Verdict::Unverified
        }
    }
}

/// Reads a verifier's score: a number from 0 to 1 (NaN, infinities and anything outside are
/// refused, and the item is reported, not changed).
pub fn check_score(score: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&score) {
        Ok(score)
    } else {
        Err(Error::invalid(
            "score",
            format!("must be a number from 0 to 1, is {score}"),
        ))
    }
}

/// What the gate made of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Verdict {
    /// Scored at least the threshold: it may merge upward.
    Verified,
    /// Scored in between: it stays where it is, and may be verified again.
    Unverified,
    /// Scored below `invalidate_below`: it stays, marked wrong.
    Invalidated,
}

/// Where a fact stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum FactStatus {
    /// Written, not verified yet (or scored in between).
    #[default]
    Active,
    /// Passed the gate.
    Verified,
    /// Failed the gate.
    Invalidated,
    /// Copied to the parent branch by a merge: the copy is what counts now.
    Promoted,
    /// Replaced by a newer fact.
    Superseded,
}

impl FactStatus {
    /// Whether a fact in this status is key knowledge a task hands on (a replay's key facts,
    /// a bundle's): a verified one, or, unless `verified_only`, one not verified yet. A promoted
    /// fact's copy lies upstream; invalidated and superseded ones never count.
    pub fn is_key(self, verified_only: bool) -> bool {
        match self {
            FactStatus::Verified => true,
            FactStatus::Active => !verified_only,
            FactStatus::Promoted | FactStatus::Invalidated | FactStatus::Superseded => false,
        }
    }

    /// The status a verdict gives a fact that is still open to verification (active,
    /// verified or invalidated); promoted and superseded facts keep theirs.
    pub fn after(self, verdict: Verdict) -> FactStatus {
        match self {
            FactStatus::Promoted | FactStatus::Superseded => self,
            _ => match verdict {
                Verdict::Verified => FactStatus::Verified,
                Verdict::Invalidated => FactStatus::Invalidated,
                Verdict::Unverified => FactStatus::Active,
            },
        }
    }
}

/// A fact as a caller gives it: its text, and optionally how sure its author was and where
/// it came from (a plain string is a fact with only a text).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewFact {
    /// What is known.
    pub text: String,
    /// How sure its author was, from 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Where it came from (a file, a conversation, a URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl NewFact {
    /// Every problem of `facts` at once, named `facts[i].text`, ...
    pub fn check_all(facts: &[NewFact], limits: &crate::Limits) -> Result<()> {
        let mut c = Collector::default();
        if facts.len() > limits.max_list_items {
            c.push(
                "facts",
                format!("must have at most {} items", limits.max_list_items),
            );
        }
        for (i, fact) in facts.iter().enumerate() {
            NewFact::check_one(
                &mut c,
                i,
                (&fact.text, fact.confidence, fact.source.as_deref()),
                limits,
            );
        }
        c.finish()
    }

    /// Every problem of the `i`-th fact, given as its text, confidence and source, named
    /// `facts[i].text`, ...: the rules of a new fact, and of a bundle's.
    pub(crate) fn check_one(
        c: &mut Collector,
        i: usize,
        (text, confidence, source): (&str, Option<f64>, Option<&str>),
        limits: &crate::Limits,
    ) {
        if text.trim().is_empty() {
            c.push(format!("facts[{i}].text"), "must not be empty");
        }
        crate::validate::text_named(c, limits, || format!("facts[{i}].text"), text);
        if let Some(source) = source {
            crate::validate::text_named(c, limits, || format!("facts[{i}].source"), source);
        }
        if confidence.is_some_and(|confidence| !(0.0..=1.0).contains(&confidence)) {
            c.push(
                format!("facts[{i}].confidence"),
                "must be a number from 0 to 1",
            );
        }
    }
}

/// A fact on a branch, with what the gate made of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Fact {
    /// Its id.
    pub id: String,
    /// The branch it lies on.
    pub branch: Branch,
    /// What is known.
    pub text: String,
    /// How sure its author was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Where it stands.
    pub status: FactStatus,
    /// The last verification's score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Why, in the verifier's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// Who verified it (the verifier's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_by: Option<String>,
    /// When it was last verified.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::clock::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub verified_at: Option<DateTime<Utc>>,
    /// The fact a merge copied it from, for a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// When it was written.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: DateTime<Utc>,
}

/// A conversation on a branch: its messages are kept beside it, numbered from 1 (`seq`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Conversation {
    /// Its id.
    pub id: String,
    /// The branch it lies on.
    pub branch: Branch,
    /// What it is about.
    #[serde(default)]
    pub title: Option<String>,
    /// The task it belongs to.
    #[serde(default)]
    pub task_id: Option<String>,
    /// The agent that had it.
    #[serde(default)]
    pub agent: Option<String>,
    /// How many messages it holds.
    pub message_count: u64,
    /// What the gate made of it (`unverified` until a verifier scores it).
    pub verification_status: Verdict,
    /// The last verification's score.
    #[serde(default)]
    pub verification_score: Option<f64>,
    /// Why, in the verifier's words.
    #[serde(default)]
    pub explanation: Option<String>,
    /// Who verified it.
    #[serde(default)]
    pub verified_by: Option<String>,
    /// For a cherry-pick's result: the conversation it was picked from.
    #[serde(default)]
    pub cherry_picked_from: Option<String>,
    /// For a merge's copy: the conversation it was copied from.
    #[serde(default)]
    pub origin: Option<String>,
    /// Whether a merge copied it to the parent branch.
    #[serde(default)]
    pub promoted: bool,
    /// When it was written.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: DateTime<Utc>,
}

/// Where a message was cherry-picked to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct PickedTo {
    /// The conversation the pick made.
    pub conversation_id: String,
    /// Its branch.
    pub branch: Branch,
    /// When.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub picked_at: DateTime<Utc>,
}

/// A message of a conversation, with its place and where it was picked to. As JSON, the
/// message's own fields (`role`, `content`, `tool_calls`, ...) sit beside `seq`,
/// `is_cherry_picked` and `cherry_picked_to`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct StoredMessage {
    /// Its place in the conversation, from 1.
    pub seq: u64,
    /// The message (role, content, tool calls, ...).
    #[serde(flatten)]
    pub message: Message,
    /// Whether a cherry-pick took it (`cherry_picked_to` is not empty).
    pub is_cherry_picked: bool,
    /// Every cherry-pick that took it.
    pub cherry_picked_to: Vec<PickedTo>,
}

/// A branch that holds something, with its parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct BranchInfo {
    /// Its name.
    pub name: Branch,
    /// Its parent (`None` for `main`).
    pub parent: Option<Branch>,
}

/// A verifier's answer: a score from 0 to 1, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Score {
    /// From 0 (wrong) to 1 (certainly right).
    pub score: f64,
    /// Why, in the verifier's words.
    #[serde(default)]
    pub explanation: Option<String>,
}

impl Score {
    /// Reads a verifier's answer given as JSON: a number, `[score, explanation]` or
    /// `{"score", "explanation"?}`. The score is checked by the verification
    /// ([`check_score`]), which reports the item when it is NaN or outside 0..1.
    pub fn from_answer(answer: &serde_json::Value) -> Result<Score> {
        use serde_json::Value;
        let score = |value: &Value| {
            value.as_f64().ok_or_else(|| {
                Error::invalid("score", format!("must be a number from 0 to 1, is {value}"))
            })
        };
        let explanation = |value: Option<&Value>| match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(Error::invalid(
                "explanation",
                format!("must be a string, is {other}"),
            )),
        };
        match answer {
            Value::Array(pair) if (1..=2).contains(&pair.len()) => Ok(Score {
                score: score(&pair[0])?,
                explanation: explanation(pair.get(1))?,
            }),
            Value::Object(fields) => Ok(Score {
                score: score(fields.get("score").unwrap_or(&Value::Null))?,
                explanation: explanation(fields.get("explanation"))?,
            }),
            other => Ok(Score {
                score: score(other)?,
                explanation: None,
            }),
        }
    }
}

/// What a verifier is asked to judge.
#[derive(Clone, Copy, Debug)]
pub enum VerifyItem<'a> {
    /// A fact.
    Fact(&'a Fact),
    /// A conversation, with its messages.
    Conversation(&'a Conversation, &'a [StoredMessage]),
}

impl VerifyItem<'_> {
    /// The item as a verifier in another language reads it: the fact's or the conversation's
    /// fields with `kind` (`fact`, `conversation`) and `text` (the fact, or the conversation
    /// as `role: content` lines), and for a conversation its `messages`.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        let (kind, value, text, messages) = match self {
            VerifyItem::Fact(fact) => ("fact", serde_json::to_value(fact), fact.text.clone(), None),
            VerifyItem::Conversation(conversation, messages) => {
                let text = messages
                    .iter()
                    .map(|m| format!("{}: {}", m.message.role, m.message.content))
                    .collect::<Vec<_>>()
                    .join("\n");
                (
                    "conversation",
                    serde_json::to_value(conversation),
                    text,
                    Some(serde_json::to_value(messages)),
                )
            }
        };
        let shown =
            |err: serde_json::Error| Error::storage(format!("could not show an item: {err}"));
        let mut value = value.map_err(shown)?;
        if let serde_json::Value::Object(fields) = &mut value {
            fields.insert("kind".into(), kind.into());
            fields.insert("text".into(), text.into());
            if let Some(messages) = messages {
                fields.insert("messages".into(), messages.map_err(shown)?);
            }
        }
        Ok(value)
    }
}

/// Scores facts and conversations (an LLM judge). An error leaves the item as it was; the
/// verification reports it.
pub trait Verifier {
    /// Who verifies: stored on each item as `verified_by`.
    fn name(&self) -> &str {
        "verifier"
    }

    /// The score of `item`.
    fn verify(&mut self, item: VerifyItem<'_>) -> Result<Score>;
}

/// Draws facts from a conversation, in place of the heuristics (an LLM): each fact a
/// candidate, written `active` on the target branch for the gate to verify later. An error
/// stops the call, which then writes nothing.
pub trait Extractor {
    /// Who drew them: the facts' `source` names it beside the conversation.
    fn name(&self) -> &str {
        "extractor"
    }

    /// The facts `conversation` (with its `messages`) holds.
    fn extract(
        &mut self,
        conversation: &Conversation,
        messages: &[StoredMessage],
    ) -> Result<Vec<NewFact>>;
}

/// Phrases by which an agent states a conclusion or a decision (the seed's cherry_pick_to_facts:
/// the bridge from what was said to what is known), matched case-insensitively.
const CONCLUSION_PHRASES: &[&str] = &[
    "root cause",
    "the cause is",
    "caused by",
    "the issue is",
    "the issue was",
    "the problem is",
    "the problem was",
    "the bug is",
    "the bug was",
    "found the issue",
    "fixed by",
    "the fix is",
    "the fix was",
    "fixed it",
    "the solution",
    "the approach is",
    "the approach was",
    "decided to",
    "we decided",
    "i decided",
    "i'll ",
    "i will ",
    "turns out",
    "it turns out",
    "because ",
    "must ",
    "should always",
    "never ",
    "requires ",
    "works when",
    "fails when",
];

/// The most facts the heuristics draw from one conversation: the rest would be noise.
pub const MAX_EXTRACTED_FACTS: usize = 50;

/// Sentences shorter than this say too little to be a fact on their own.
const MIN_FACT_CHARS: usize = 16;

/// Whether `word` names a file or a place in one (`auth.py`, `src/token.rs:142`, `/etc/hosts`).
fn is_path(word: &str) -> bool {
    let word = word.trim_matches(|c: char| "`'\"()[]{},;".contains(c));
    let word = word.trim_end_matches(['.', ':']);
    if word.len() < 3 || word.starts_with("http") {
        return false;
    }
    let stem = word.split(':').next().unwrap_or(word);
    let has_extension = stem.rsplit_once('.').is_some_and(|(name, ext)| {
        !name.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    has_extension || (stem.contains('/') && stem.chars().filter(|c| *c == '/').count() >= 2)
}

/// Whether `sentence` holds a number that says something (`3 retries`, `1h`, `0.7`), not a
/// list marker or a lone digit.
fn has_number(sentence: &str) -> bool {
    sentence.split_whitespace().any(|word| {
        let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '.');
        let digits = word.chars().filter(char::is_ascii_digit).count();
        digits > 0 && (digits >= 2 || word.len() > digits || word.contains('.'))
    })
}

/// The sentences of a text: split after `.`, `!`, `?` followed by a space, and at line ends.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            current.push(c);
            if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
                out.push(std::mem::take(&mut current));
            }
        }
        out.push(current);
    }
    out.into_iter()
        .map(|s| {
            s.trim()
                .trim_start_matches(['-', '*', '>', '#'])
                .trim()
                .to_owned()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The facts a conversation states, by the heuristics: sentences of the assistant's messages
/// that state a conclusion or a decision ("the root cause is", "fixed by", "I'll", "the
/// approach is", ...), or that name a file or a number (`token_service.py:142`, `3 retries`).
/// Questions are left out, each fact once (case-insensitively), at most
/// [`MAX_EXTRACTED_FACTS`]. Each is a candidate: a conclusion with confidence 0.6, a file or a
/// number alone 0.5, its `source` the conversation and the message's `seq`.
///
/// ```
/// use handoff_core::curation::{extract_facts, seed_example};
///
/// let facts = extract_facts("c1", &seed_example());
/// let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
/// assert_eq!(texts, ["found the issue: the expiry is compared in seconds"]);
/// assert_eq!(facts[0].source.as_deref(), Some("conversation:c1#5"));
/// ```
pub fn extract_facts(conversation_id: &str, messages: &[Message]) -> Vec<NewFact> {
    let mut seen = HashSet::new();
    let mut facts = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        if !is_assistant(message) {
            continue;
        }
        for sentence in sentences(&message.content) {
            if facts.len() == MAX_EXTRACTED_FACTS {
                return facts;
            }
            let lower = sentence.to_lowercase();
            if sentence.chars().count() < MIN_FACT_CHARS || sentence.ends_with('?') {
                continue;
            }
            let concludes = CONCLUSION_PHRASES.iter().any(|p| lower.contains(p));
            let concrete = sentence.split_whitespace().any(is_path) || has_number(&sentence);
            if !(concludes || concrete) || !seen.insert(lower) {
                continue;
            }
            facts.push(NewFact {
                text: sentence,
                confidence: Some(if concludes { 0.6 } else { 0.5 }),
                source: Some(format!("conversation:{conversation_id}#{}", i + 1)),
            });
        }
    }
    facts
}

/// One item a verification scored, or could not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct VerifiedItem {
    /// `fact` or `conversation`.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// Its score (`None` when the verifier failed on it).
    #[serde(default)]
    pub score: Option<f64>,
    /// What the gate made of it (`None` when the verifier failed on it).
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Why the verifier failed on it, when it did.
    #[serde(default)]
    pub error: Option<String>,
}

/// What a verification did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct VerifyReport {
    /// The branch verified.
    pub branch: Option<Branch>,
    /// Items that passed.
    pub verified: u64,
    /// Items that failed the gate.
    pub invalidated: u64,
    /// Items scored in between (all of them without a verifier: the neutral 0.5).
    pub unverified: u64,
    /// Items the verifier failed on, left as they were.
    pub failed: u64,
    /// Every item, in the order verified.
    pub items: Vec<VerifiedItem>,
}

/// What a merge did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct MergeReport {
    /// The branch merged.
    pub branch: Option<Branch>,
    /// Where to.
    pub into: Option<Branch>,
    /// Facts copied up (their sources are now `promoted`).
    pub facts: u64,
    /// Conversations copied up.
    pub conversations: u64,
    /// Items left where they are (unverified, invalidated).
    pub kept: u64,
}

/// What changed in curated memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum CurationChange {
    /// A conversation was written.
    ConversationAdded,
    /// Messages were added at the end of a conversation.
    MessagesAppended,
    /// Messages were cherry-picked into a new conversation.
    CherryPicked,
    /// Facts were written.
    FactsAdded,
    /// A branch was verified.
    Verified,
    /// A branch was merged into another.
    Merged,
    /// A bundle was made of a branch's or a task's knowledge.
    BundleCreated,
    /// A bundle's knowledge was imported into a branch.
    BundleImported,
}

/// One entry of the curation log: what changed, where and when, with its ids and counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct CurationEvent {
    /// When.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub at: DateTime<Utc>,
    /// What.
    pub kind: CurationChange,
    /// The branch it changed.
    pub branch: Branch,
    /// Its ids and counts (`conversation_id`, `messages`, `facts`, `verified`, `into`, ...).
    pub detail: serde_json::Value,
}

/// What a merge of a branch into its parent does: the facts and conversations it copies up
/// (by id, in order) and the facts that become `promoted`. Merging twice copies nothing the
/// second time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MergePlan {
    /// Verified facts to copy up (their sources become `promoted`).
    pub facts: Vec<String>,
    /// Verified or cherry-picked conversations to copy up.
    pub conversations: Vec<String>,
    /// Facts and conversations left where they are (unverified, invalidated), by id.
    pub kept: Vec<String>,
}

/// A conversation as a merge sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConversationState {
    /// Its id.
    pub id: String,
    /// What the gate made of it, if it was verified.
    pub verdict: Option<Verdict>,
    /// Whether it is a cherry-pick's result.
    pub cherry_picked: bool,
}

/// What merging a branch (`facts` and `conversations` on it) into a parent that already holds
/// `parent_origins` (the `origin`s of the copies a merge made before) does.
pub fn merge_plan(
    facts: &[Fact],
    conversations: &[ConversationState],
    parent_origins: &HashSet<String>,
) -> MergePlan {
    let mut plan = MergePlan::default();
    for fact in facts {
        match fact.status {
            FactStatus::Verified if !parent_origins.contains(&fact.id) => {
                plan.facts.push(fact.id.clone());
            }
            FactStatus::Active | FactStatus::Invalidated => plan.kept.push(fact.id.clone()),
            _ => {}
        }
    }
    for conversation in conversations {
        let goes_up = conversation.verdict == Some(Verdict::Verified)
            || (conversation.cherry_picked && conversation.verdict != Some(Verdict::Invalidated));
        if !goes_up {
            plan.kept.push(conversation.id.clone());
        } else if !parent_origins.contains(&conversation.id) {
            plan.conversations.push(conversation.id.clone());
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn branches_have_three_forms_and_parents() {
        for bad in [
            "",
            "Main",
            "task",
            "task/",
            "task/a/b/c",
            "task/../x",
            "task/a b",
            "feature/x",
        ] {
            let err = Branch::parse(bad).unwrap_err();
            assert_eq!(err.problems()[0].field, "branch", "{bad}");
        }
        let task = Branch::parse("task/fix-oauth").unwrap();
        assert_eq!(task.parent(), Some(Branch::main()));
        assert_eq!(Branch::main().parent(), None);
        let json = serde_json::to_string(&task).unwrap();
        assert_eq!(json, "\"task/fix-oauth\"");
        assert!(serde_json::from_str::<Branch>("\"nope/x\"").is_err());
    }

    #[test]
    fn ranges_are_checked_against_the_conversation() {
        assert_eq!(seq_range(10, Some(5), Some(9)).unwrap(), 5..=9);
        assert_eq!(seq_range(10, None, None).unwrap(), 1..=10);
        let err = seq_range(10, Some(9), Some(11)).unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["to_seq"]);
        let err = seq_range(10, Some(0), Some(0)).unwrap_err();
        assert_eq!(err.problems().len(), 2);
        let err = seq_range(10, Some(7), Some(3)).unwrap_err();
        assert_eq!(err.problems()[0].rule, "must not be before from_seq");
        assert!(seq_range(0, None, None).is_err());
    }

    #[test]
    fn the_seeds_example_has_its_decision_points_and_tool_sequences() {
        let messages = seed_example();
        // msg 2 "let me investigate", msg 5 "found the issue" (leads to the Edit that
        // worked), msg 8 "fixed, let me test" (an approach, and its pytest call worked);
        // as seqs: 2, 5, 8.
        let picked: Vec<usize> = decision_points(&messages, None)
            .unwrap()
            .iter()
            .map(|i| i + 1)
            .collect();
        assert_eq!(picked, [2, 5, 8]);
        let sequences = tool_sequences(&messages);
        assert_eq!(sequences, [vec![2, 3], vec![5, 6], vec![7, 8]]);
    }

    #[test]
    fn the_message_after_a_failed_tool_is_a_decision() {
        let messages: Vec<Message> = serde_json::from_value(json!([
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "name": "Bash", "arguments": {"cmd": "pytest"}}]},
            {"role": "tool", "tool_call_id": "c1",
             "content": "Traceback (most recent call last):\n  ...\nAssertionError"},
            {"role": "assistant", "content": "The refresh is retried once; retry three times."},
            {"role": "assistant", "content": "Done."},
        ]))
        .unwrap();
        assert_eq!(decision_points(&messages, None).unwrap(), [2]);
        // A judge decides instead.
        let mut judge = |i: usize, _: &Message| Ok(i == 3);
        assert_eq!(decision_points(&messages, Some(&mut judge)).unwrap(), [3]);
        let mut failing = |_: usize, _: &Message| Err(Error::invalid("judge", "timed out"));
        assert!(decision_points(&messages, Some(&mut failing)).is_err());
    }

    #[test]
    fn thresholds_give_verdicts_and_refuse_bad_values() {
        let t = Thresholds::default();
        assert_eq!(t.fact_verdict(0.7), Verdict::Verified);
        assert_eq!(t.fact_verdict(NEUTRAL_SCORE), Verdict::Unverified);
        assert_eq!(t.fact_verdict(0.39), Verdict::Invalidated);
        assert_eq!(t.conversation_verdict(0.6), Verdict::Verified);
        assert!(check_score(f64::NAN).is_err());
        assert!(check_score(1.5).is_err());
        assert_eq!(check_score(1.0).unwrap(), 1.0);
        let bad = Thresholds {
            fact_threshold: 2.0,
            invalidate_below: 0.9,
            conversation_threshold: 0.6,
        };
        let fields: Vec<_> = bad
            .check()
            .unwrap_err()
            .problems()
            .iter()
            .map(|p| p.field.clone())
            .collect();
        assert_eq!(fields, ["fact_threshold", "invalidate_below"]);
        assert_eq!(
            FactStatus::Promoted.after(Verdict::Invalidated),
            FactStatus::Promoted
        );
    }

    #[test]
    fn facts_are_checked_whole() {
        let facts: Vec<NewFact> = serde_json::from_value(json!([
            {"text": "refresh needs retries with backoff", "confidence": 0.8},
            {"text": " "},
            {"text": "x", "confidence": 1.5}
        ]))
        .unwrap();
        let err = NewFact::check_all(&facts, &crate::Limits::default()).unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["facts[1].text", "facts[2].confidence"]);
    }

    #[test]
    fn a_merge_moves_up_what_passed_and_only_once() {
        let fact = |id: &str, status| Fact {
            id: id.into(),
            branch: Branch::parse("task/t/agent-b").unwrap(),
            text: id.into(),
            confidence: None,
            source: None,
            status,
            score: None,
            explanation: None,
            verified_by: None,
            verified_at: None,
            origin: None,
            created_at: DateTime::UNIX_EPOCH,
        };
        let facts = [
            fact("f1", FactStatus::Verified),
            fact("f2", FactStatus::Active),
            fact("f3", FactStatus::Invalidated),
            fact("f4", FactStatus::Promoted),
        ];
        let conversation = |id: &str, verdict, cherry_picked| ConversationState {
            id: id.into(),
            verdict,
            cherry_picked,
        };
        let conversations = [
            conversation("c1", Some(Verdict::Verified), false),
            conversation("c2", None, true),
            conversation("c3", None, false),
            conversation("c4", Some(Verdict::Invalidated), true),
        ];
        let plan = merge_plan(&facts, &conversations, &HashSet::new());
        assert_eq!(plan.facts, ["f1"]);
        assert_eq!(plan.conversations, ["c1", "c2"]);
        assert_eq!(plan.kept, ["f2", "f3", "c3", "c4"]);
        let merged: HashSet<String> = ["f1", "c1", "c2"].map(String::from).into();
        let again = merge_plan(&facts, &conversations, &merged);
        assert!(again.facts.is_empty() && again.conversations.is_empty());
    }
}
