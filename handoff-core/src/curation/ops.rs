//! The curation operations (docs/design.md §9), under the names every face shows: Python's
//! `add_conversation`, the CLI's `handoff conversation add`, the MCP tool `conversation_add`;
//! the branch-wide ones stand alone (`handoff cherry-pick`, the MCP tool `cherry_pick`).
//!
//! A verifier and a decision judge are code, not JSON: [`Verify::run_with`] and
//! [`CherryPickDecisions::run_with`] take them beside the arguments, and each face wraps its
//! own callables in a [`JsonVerifier`] or [`JsonJudge`], which speak the JSON every face shares.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Message;
use crate::curation::{
    BranchInfo, Conversation, CurationEvent, Extractor, Fact, FactStatus, Judge, MergeReport,
    NewFact, Score, StoredMessage, Thresholds, Verifier, VerifyItem, VerifyReport,
};
use crate::error::{Error, Problem, Result};
use crate::messages;
use crate::ops::{Access, Arguments, Operation, branch_problems};
use crate::store::{NewConversation, Store, check_messages};
use crate::validate::{Collector, Limits};

/// The problems of messages given in any shape: those of their shape, else those of the
/// messages read (roles, sizes under `limits`).
fn messages_problems(problems: &mut Vec<Problem>, values: &[Value], limits: &Limits) {
    match messages::normalize(values) {
        Err(err) => problems.extend(err.problems().iter().cloned()),
        Ok(messages) => {
            let mut c = Collector::default();
            check_messages(&mut c, limits, &messages);
            if let Err(err) = c.finish() {
                problems.extend(err.problems().iter().cloned());
            }
        }
    }
}

/// Writes a conversation on a branch (`main`, `task/<task>` or `task/<task>/<agent>`, created
/// on first use), its messages numbered from 1 (`seq`). Messages come in the OpenAI chat
/// shape or as Responses / Agents SDK items, Anthropic messages or LangChain message dicts.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddConversationArgs {
    /// The branch it goes on.
    pub branch: String,
    /// Its messages, in order: `{"role", "content", "tool_calls"?, "tool_call_id"?}` or a
    /// provider's own shape.
    pub messages: Vec<Value>,
    /// What it is about.
    #[serde(default)]
    pub title: Option<String>,
    /// The task it belongs to (by default the branch's).
    #[serde(default)]
    pub task_id: Option<String>,
    /// The agent that had it (by default the branch's).
    #[serde(default)]
    pub agent: Option<String>,
}

impl Arguments for AddConversationArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "branch", &self.branch);
        messages_problems(&mut problems, &self.messages, limits);
        problems
    }
}

/// The `add_conversation` operation.
pub struct AddConversation;

impl Operation for AddConversation {
    const NAME: &'static str = "add_conversation";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("conversation", "add"));
    const POSITIONAL: &'static [&'static str] = &["branch", "messages"];
    type Args = AddConversationArgs;
    type Output = Conversation;

    fn run(store: &Store, args: AddConversationArgs) -> Result<Conversation> {
        store.add_conversation(NewConversation {
            branch: args.branch,
            messages: messages::normalize(&args.messages)?,
            title: args.title,
            task_id: args.task_id,
            agent: args.agent,
        })
    }
}

/// Adds messages at the end of a conversation, numbered after its last.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendMessagesArgs {
    /// The conversation's id.
    pub conversation_id: String,
    /// The messages, in order, in any shape `add_conversation` reads.
    pub messages: Vec<Value>,
}

impl Arguments for AppendMessagesArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        messages_problems(&mut problems, &self.messages, limits);
        problems
    }
}

/// The `append_messages` operation.
pub struct AppendMessages;

impl Operation for AppendMessages {
    const NAME: &'static str = "append_messages";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("conversation", "append"));
    const POSITIONAL: &'static [&'static str] = &["conversation_id", "messages"];
    type Args = AppendMessagesArgs;
    type Output = Conversation;

    fn run(store: &Store, args: AppendMessagesArgs) -> Result<Conversation> {
        store.append_messages(&args.conversation_id, messages::normalize(&args.messages)?)
    }
}

/// The conversation with this id; `NOT_FOUND` if there is none.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetConversationArgs {
    /// The conversation's id.
    pub id: String,
}

impl Arguments for GetConversationArgs {}

/// The `get_conversation` operation.
pub struct GetConversation;

impl Operation for GetConversation {
    const NAME: &'static str = "get_conversation";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("conversation", "show"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = GetConversationArgs;
    type Output = Conversation;

    fn run(store: &Store, args: GetConversationArgs) -> Result<Conversation> {
        store.get_conversation(&args.id)
    }
}

/// A conversation's messages `from_seq..=to_seq` (all of them by default), in order, each with
/// its `seq` and where it was cherry-picked to.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessagesArgs {
    /// The conversation's id.
    pub id: String,
    /// The first message (from 1).
    #[serde(default)]
    pub from_seq: Option<u64>,
    /// The last message.
    #[serde(default)]
    pub to_seq: Option<u64>,
}

impl Arguments for MessagesArgs {}

/// The `messages` operation.
pub struct Messages;

impl Operation for Messages {
    const NAME: &'static str = "messages";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("conversation", "messages"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = MessagesArgs;
    type Output = Vec<StoredMessage>;

    fn run(store: &Store, args: MessagesArgs) -> Result<Vec<StoredMessage>> {
        store.messages(&args.id, args.from_seq, args.to_seq)
    }
}

/// The conversations of a branch, of a task, or of the whole store, oldest first.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListConversationsArgs {
    /// Only those on this branch.
    #[serde(default)]
    pub branch: Option<String>,
    /// Only those of this task.
    #[serde(default)]
    pub task_id: Option<String>,
}

impl Arguments for ListConversationsArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(branch) = &self.branch {
            branch_problems(&mut problems, "branch", branch);
        }
        problems
    }
}

/// The `list_conversations` operation.
pub struct ListConversations;

impl Operation for ListConversations {
    const NAME: &'static str = "list_conversations";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("conversation", "list"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = ListConversationsArgs;
    type Output = Vec<Conversation>;

    fn run(store: &Store, args: ListConversationsArgs) -> Result<Vec<Conversation>> {
        store.list_conversations(args.branch.as_deref(), args.task_id.as_deref())
    }
}

/// Copies the messages `from_seq..=to_seq` of a conversation (all of it by default) into a new
/// conversation on `target_branch`; the source messages are marked `cherry_picked_to` it. The
/// range must lie inside the conversation, `from_seq ≤ to_seq`. With `verify`, the verification
/// gate scores what was picked before it is written (a verifier, the judge command, or the MCP
/// client's model), and the pick is written with its verdict; without a judge to ask, `verify`
/// is refused and nothing is written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CherryPickArgs {
    /// The conversation to pick from.
    pub conversation_id: String,
    /// Where the new conversation goes.
    pub target_branch: String,
    /// The first message to take (from 1; `from_sequence` is accepted too).
    #[serde(default, alias = "from_sequence")]
    #[schemars(extend("x-aliases" = ["from_sequence"]))]
    pub from_seq: Option<u64>,
    /// The last message to take (`to_sequence` is accepted too).
    #[serde(default, alias = "to_sequence")]
    #[schemars(extend("x-aliases" = ["to_sequence"]))]
    pub to_seq: Option<u64>,
    /// The new conversation's title.
    #[serde(default)]
    pub title: Option<String>,
    /// Run the verification gate on the pick (default false): verified at 0.6, invalidated
    /// below 0.4, as `verify` scores a conversation.
    #[serde(default)]
    pub verify: Option<bool>,
}

impl Arguments for CherryPickArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "target_branch", &self.target_branch);
        problems
    }
}

/// The `cherry_pick` operation.
pub struct CherryPick;

impl Operation for CherryPick {
    const NAME: &'static str = "cherry_pick";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "cherry-pick"));
    const POSITIONAL: &'static [&'static str] = &["conversation_id", "target_branch"];
    type Args = CherryPickArgs;
    type Output = Conversation;

    fn run(store: &Store, args: CherryPickArgs) -> Result<Conversation> {
        Self::run_with(store, args, None)
    }
}

/// What `verify` without a judge to ask says.
pub const NO_JUDGE: &str = "needs a judge to score with: a verifier (Python, Node, uniffi), \
     --judge-cmd (the CLI, `handoff serve`, `handoff mcp`) or an MCP client that can sample; \
     without one, pick now and verify the branch later";

impl CherryPick {
    /// Runs the pick; with `verify` (or a verifier and no `verify: false`), `verifier` scores
    /// it before it is written. `verify` without a verifier is refused, naming `verify`.
    pub fn run_with(
        store: &Store,
        args: CherryPickArgs,
        verifier: Option<&mut dyn Verifier>,
    ) -> Result<Conversation> {
        let verify = args.verify.unwrap_or(verifier.is_some());
        match (verify, verifier) {
            (false, _) => store.cherry_pick(
                &args.conversation_id,
                &args.target_branch,
                args.from_seq,
                args.to_seq,
                args.title.as_deref(),
            ),
            (true, None) => Err(Error::invalid("verify", NO_JUDGE)),
            (true, Some(verifier)) => store.cherry_pick_verified(
                &args.conversation_id,
                &args.target_branch,
                args.from_seq,
                args.to_seq,
                args.title.as_deref(),
                verifier,
                &Thresholds::default(),
            ),
        }
    }
}

/// Draws facts from a conversation and writes them on `target_branch` as candidates (status
/// `active`, for the gate to verify later): by an extractor (a face's callable, the judge
/// command, or the MCP client's model) or, without one, by the heuristics: sentences of the
/// assistant's messages that state a conclusion or a decision ("the root cause is", "fixed
/// by", "I'll", "the approach is", ...) or name a file or a number. Each fact's `source` is
/// the conversation (and the message). A conversation that states nothing writes nothing.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CherryPickToFactsArgs {
    /// The conversation to draw facts from.
    pub conversation_id: String,
    /// Where the facts go.
    pub target_branch: String,
}

impl Arguments for CherryPickToFactsArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "target_branch", &self.target_branch);
        problems
    }
}

/// The `cherry_pick_to_facts` operation.
pub struct CherryPickToFacts;

impl CherryPickToFacts {
    /// Runs it with `extractor` drawing the facts in place of the heuristics.
    pub fn run_with(
        store: &Store,
        args: CherryPickToFactsArgs,
        extractor: Option<&mut dyn Extractor>,
    ) -> Result<Vec<Fact>> {
        store.cherry_pick_to_facts(&args.conversation_id, &args.target_branch, extractor)
    }
}

impl Operation for CherryPickToFacts {
    const NAME: &'static str = "cherry_pick_to_facts";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "cherry-pick-to-facts"));
    const POSITIONAL: &'static [&'static str] = &["conversation_id", "target_branch"];
    type Args = CherryPickToFactsArgs;
    type Output = Vec<Fact>;

    fn run(store: &Store, args: CherryPickToFactsArgs) -> Result<Vec<Fact>> {
        Self::run_with(store, args, None)
    }
}

/// Copies a conversation's decision points into a new conversation on `target_branch`: by the
/// seed's heuristics, assistant messages that state an approach ("I'll", "let me", "the
/// approach", "decided"), the first one after a tool that failed, and the one that leads to a
/// tool call that succeeded. A judge (a face's callable, or the MCP client's model) may decide
/// instead; when it fails, nothing is written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CherryPickDecisionsArgs {
    /// The conversation to pick from.
    pub conversation_id: String,
    /// Where the new conversation goes.
    pub target_branch: String,
}

impl Arguments for CherryPickDecisionsArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "target_branch", &self.target_branch);
        problems
    }
}

/// The `cherry_pick_decisions` operation.
pub struct CherryPickDecisions;

impl CherryPickDecisions {
    /// Runs the pick with `judge` deciding in place of the heuristics.
    pub fn run_with(
        store: &Store,
        args: CherryPickDecisionsArgs,
        judge: Option<&mut dyn Judge>,
    ) -> Result<Conversation> {
        store.cherry_pick_decisions(&args.conversation_id, &args.target_branch, judge)
    }
}

impl Operation for CherryPickDecisions {
    const NAME: &'static str = "cherry_pick_decisions";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "cherry-pick-decisions"));
    const POSITIONAL: &'static [&'static str] = &["conversation_id", "target_branch"];
    type Args = CherryPickDecisionsArgs;
    type Output = Conversation;

    fn run(store: &Store, args: CherryPickDecisionsArgs) -> Result<Conversation> {
        Self::run_with(store, args, None)
    }
}

/// Copies a conversation's tool-call sequences (each call with its results) into a new
/// conversation on `target_branch`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CherryPickToolsArgs {
    /// The conversation to pick from.
    pub conversation_id: String,
    /// Where the new conversation goes.
    pub target_branch: String,
}

impl Arguments for CherryPickToolsArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "target_branch", &self.target_branch);
        problems
    }
}

/// The `cherry_pick_tools` operation.
pub struct CherryPickTools;

impl Operation for CherryPickTools {
    const NAME: &'static str = "cherry_pick_tools";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "cherry-pick-tools"));
    const POSITIONAL: &'static [&'static str] = &["conversation_id", "target_branch"];
    type Args = CherryPickToolsArgs;
    type Output = Conversation;

    fn run(store: &Store, args: CherryPickToolsArgs) -> Result<Conversation> {
        store.cherry_pick_tools(&args.conversation_id, &args.target_branch)
    }
}

/// A fact as a caller gives it: a plain text, or `{"text", "confidence"?, "source"?}`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FactInput {
    /// Only the text.
    Text(String),
    /// The text with how sure its author was and where it came from.
    Fact(NewFact),
}

impl FactInput {
    fn into_new(self) -> NewFact {
        match self {
            FactInput::Text(text) => NewFact {
                text,
                confidence: None,
                source: None,
            },
            FactInput::Fact(fact) => fact,
        }
    }
}

/// Writes facts on a branch (status `active`), checked whole first: every problem at once,
/// nothing written when there is one.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddFactsArgs {
    /// The branch they go on.
    pub branch: String,
    /// The facts: texts, or `{"text", "confidence"?, "source"?}`.
    pub facts: Vec<FactInput>,
}

impl AddFactsArgs {
    fn new_facts(&self) -> Vec<NewFact> {
        self.facts
            .iter()
            .cloned()
            .map(FactInput::into_new)
            .collect()
    }
}

impl Arguments for AddFactsArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "branch", &self.branch);
        if let Err(err) = NewFact::check_all(&self.new_facts(), limits) {
            problems.extend(err.problems().iter().cloned());
        }
        problems
    }
}

/// The `add_facts` operation.
pub struct AddFacts;

impl Operation for AddFacts {
    const NAME: &'static str = "add_facts";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("facts", "add"));
    const POSITIONAL: &'static [&'static str] = &["branch", "facts"];
    type Args = AddFactsArgs;
    type Output = Vec<Fact>;

    fn run(store: &Store, args: AddFactsArgs) -> Result<Vec<Fact>> {
        let facts = args.new_facts();
        store.add_facts(&args.branch, facts)
    }
}

/// The facts of a branch, oldest first, optionally only those in one status (`active`,
/// `verified`, `invalidated`, `promoted`, `superseded`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FactsArgs {
    /// The branch.
    pub branch: String,
    /// Only facts in this status.
    #[serde(default)]
    pub status: Option<FactStatus>,
}

impl Arguments for FactsArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "branch", &self.branch);
        problems
    }
}

/// The `facts` operation.
pub struct Facts;

impl Operation for Facts {
    const NAME: &'static str = "facts";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("facts", "list"));
    const POSITIONAL: &'static [&'static str] = &["branch"];
    type Args = FactsArgs;
    type Output = Vec<Fact>;

    fn run(store: &Store, args: FactsArgs) -> Result<Vec<Fact>> {
        store.facts(&args.branch, args.status)
    }
}

/// Every branch that holds a conversation or a fact, with its parent, in name order.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BranchesArgs {}

impl Arguments for BranchesArgs {}

/// The `branches` operation.
pub struct Branches;

impl Operation for Branches {
    const NAME: &'static str = "branches";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "branches"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = BranchesArgs;
    type Output = Vec<BranchInfo>;

    fn run(store: &Store, _: BranchesArgs) -> Result<Vec<BranchInfo>> {
        store.branches()
    }
}

/// Scores a branch's facts and conversations and stores the verdicts: a fact scoring at least
/// `fact_threshold` is verified, a conversation at least `conversation_threshold`; below
/// `invalidate_below` either is invalidated. Without a verifier every score is the neutral 0.5
/// and nothing is written (no verdict given or undone; the report says what a judge would
/// score); an item the verifier fails on, or
/// scores with NaN or outside 0..1, is left as it was and reported.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyArgs {
    /// The branch to verify (`branch_name` is accepted too).
    #[serde(alias = "branch_name")]
    #[schemars(extend("x-aliases" = ["branch_name"]))]
    pub branch: String,
    /// A fact scoring at least this is verified (default 0.7).
    #[serde(default)]
    pub fact_threshold: Option<f64>,
    /// A fact or a conversation scoring below this is invalidated (default 0.4).
    #[serde(default)]
    pub invalidate_below: Option<f64>,
    /// A conversation scoring at least this is verified (default 0.6).
    #[serde(default)]
    pub conversation_threshold: Option<f64>,
}

impl VerifyArgs {
    /// The thresholds, the seed's where not given.
    pub fn thresholds(&self) -> Thresholds {
        thresholds(
            self.fact_threshold,
            self.invalidate_below,
            self.conversation_threshold,
        )
    }
}

/// The gate's thresholds from those given, the seed's where not: what `verify` and
/// `verify_bundle` take.
pub(crate) fn thresholds(
    fact: Option<f64>,
    invalidate_below: Option<f64>,
    conversation: Option<f64>,
) -> Thresholds {
    let seed = Thresholds::default();
    Thresholds {
        fact_threshold: fact.unwrap_or(seed.fact_threshold),
        invalidate_below: invalidate_below.unwrap_or(seed.invalidate_below),
        conversation_threshold: conversation.unwrap_or(seed.conversation_threshold),
    }
}

impl Arguments for VerifyArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "branch", &self.branch);
        if let Err(err) = self.thresholds().check() {
            problems.extend(err.problems().iter().cloned());
        }
        problems
    }
}

/// The `verify` operation.
pub struct Verify;

impl Verify {
    /// Runs the verification with `verifier` scoring each item.
    pub fn run_with(
        store: &Store,
        args: VerifyArgs,
        verifier: Option<&mut dyn Verifier>,
    ) -> Result<VerifyReport> {
        store.verify(&args.branch, verifier, &args.thresholds())
    }
}

impl Operation for Verify {
    const NAME: &'static str = "verify";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "verify"));
    const POSITIONAL: &'static [&'static str] = &["branch"];
    type Args = VerifyArgs;
    type Output = VerifyReport;

    fn run(store: &Store, args: VerifyArgs) -> Result<VerifyReport> {
        Self::run_with(store, args, None)
    }
}

/// Moves a branch's verified knowledge into its parent (or `into`): verified facts are copied
/// (their sources become `promoted`) and verified or cherry-picked conversations are copied
/// with their messages; unverified and invalidated items stay. Merging twice adds nothing.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeArgs {
    /// The branch to merge.
    pub branch: String,
    /// Where to (by default its parent: the name minus its last segment).
    #[serde(default)]
    pub into: Option<String>,
}

impl Arguments for MergeArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        branch_problems(&mut problems, "branch", &self.branch);
        if let Some(into) = &self.into {
            branch_problems(&mut problems, "into", into);
        }
        problems
    }
}

/// The `merge` operation.
pub struct Merge;

impl Operation for Merge {
    const NAME: &'static str = "merge";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "merge"));
    const POSITIONAL: &'static [&'static str] = &["branch"];
    type Args = MergeArgs;
    type Output = MergeReport;

    fn run(store: &Store, args: MergeArgs) -> Result<MergeReport> {
        store.merge(&args.branch, args.into.as_deref())
    }
}

/// The curation log of a task (every change on its branches: conversations added, messages
/// appended, cherry-picks, facts, verifications, merges), or of `main` without one, in order.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CurationEventsArgs {
    /// The task (by default `main`'s log).
    #[serde(default)]
    pub task_id: Option<String>,
}

impl Arguments for CurationEventsArgs {}

/// The `curation_events` operation.
pub struct CurationEvents;

impl Operation for CurationEvents {
    const NAME: &'static str = "curation_events";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "curation-events"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = CurationEventsArgs;
    type Output = Vec<CurationEvent>;

    fn run(store: &Store, args: CurationEventsArgs) -> Result<Vec<CurationEvent>> {
        store.curation_events(args.task_id.as_deref())
    }
}

/// A [`Verifier`] made of a face's callable that reads the item as JSON
/// ([`VerifyItem::to_json`]) and answers in JSON ([`Score::from_answer`]): how Python, Node,
/// uniffi and MCP sampling verify.
pub struct JsonVerifier<F> {
    name: String,
    call: F,
}

impl<F: FnMut(Value) -> Result<Value>> JsonVerifier<F> {
    /// A verifier called `name` (stored on each item as `verified_by`).
    pub fn new(name: impl Into<String>, call: F) -> Self {
        JsonVerifier {
            name: name.into(),
            call,
        }
    }
}

impl<F: FnMut(Value) -> Result<Value>> Verifier for JsonVerifier<F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn verify(&mut self, item: VerifyItem<'_>) -> Result<Score> {
        let answer = (self.call)(item.to_json()?)?;
        Score::from_answer(&answer)
    }
}

/// An [`Extractor`] made of a face's callable that reads the conversation as a verifier
/// reads it ([`VerifyItem::to_json`]) and answers its facts in JSON: a list of texts or
/// `{"text", "confidence"?, "source"?}`, or `{"facts": [...]}`. A fact it gives no `source`
/// gets the conversation's.
pub struct JsonExtractor<F> {
    name: String,
    call: F,
}

impl<F: FnMut(Value) -> Result<Value>> JsonExtractor<F> {
    /// An extractor called `name` (named in the log of the facts it drew).
    pub fn new(name: impl Into<String>, call: F) -> Self {
        JsonExtractor {
            name: name.into(),
            call,
        }
    }
}

/// Reads an extractor's answer: a list of facts (texts or objects), or `{"facts": [...]}`,
/// every problem named `facts[i]...`.
pub fn facts_from_answer(answer: Value) -> Result<Vec<NewFact>> {
    let list = match answer {
        Value::Object(mut fields) if fields.contains_key("facts") => {
            fields.remove("facts").unwrap_or(Value::Null)
        }
        other => other,
    };
    let Value::Array(items) = list else {
        return Err(Error::invalid(
            "facts",
            "the extractor must answer a list of facts (texts or {\"text\", \"confidence\"?, \
             \"source\"?}), or {\"facts\": [...]}",
        ));
    };
    let mut c = Collector::default();
    let mut facts = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match serde_json::from_value::<FactInput>(item) {
            Ok(fact) => facts.push(fact.into_new()),
            Err(_) => c.push(
                format!("facts[{i}]"),
                "must be a text or {\"text\", \"confidence\"?, \"source\"?}",
            ),
        }
    }
    c.finish()?;
    Ok(facts)
}

impl<F: FnMut(Value) -> Result<Value>> Extractor for JsonExtractor<F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn extract(
        &mut self,
        conversation: &Conversation,
        messages: &[StoredMessage],
    ) -> Result<Vec<NewFact>> {
        let item = VerifyItem::Conversation(conversation, messages).to_json()?;
        facts_from_answer((self.call)(item)?)
    }
}

/// A [`Judge`] made of a face's callable that reads a message as JSON (with its `index`, from
/// 0) and answers whether it is a decision point: a boolean.
pub struct JsonJudge<F>(pub F);

impl<F: FnMut(Value) -> Result<Value>> Judge for JsonJudge<F> {
    fn is_decision(&mut self, index: usize, message: &Message) -> Result<bool> {
        #[derive(Serialize)]
        struct Asked<'a> {
            index: usize,
            #[serde(flatten)]
            message: &'a Message,
        }
        let asked = serde_json::to_value(Asked { index, message })
            .map_err(|err| Error::storage(format!("could not show a message: {err}")))?;
        match (self.0)(asked)? {
            Value::Bool(decided) => Ok(decided),
            other => Err(Error::invalid(
                "judge",
                format!("must answer true or false, answered {other}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ops::Operation;
    use serde_json::json;

    #[test]
    fn curation_runs_through_its_operations() -> Result<()> {
        let store = Store::memory();
        let conversation = AddConversation::call(
            &store,
            json!({"branch": "task/t1/agent-b", "messages": [
                {"role": "user", "content": "fix the refresh"},
                {"role": "assistant", "content": "let me add retries with backoff"},
                // An Anthropic-shaped message is read on the way in.
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            ]}),
        )?;
        assert_eq!(conversation.message_count, 3);
        assert_eq!(conversation.task_id.as_deref(), Some("t1"));
        let picked = CherryPick::call(
            &store,
            json!({"conversation_id": conversation.id, "target_branch": "task/t1",
                   "from_seq": 2, "to_seq": 3}),
        )?;
        assert_eq!(picked.message_count, 2);
        let shown = Messages::call(&store, json!({"id": conversation.id, "from_seq": 2}))?;
        assert!(shown.iter().all(|m| m.is_cherry_picked));

        AddFacts::call(
            &store,
            json!({"branch": "task/t1/agent-b",
                   "facts": ["refresh needs retries", {"text": "tokens last 1h", "confidence": 0.9}]}),
        )?;
        let mut verifier = JsonVerifier::new("judge", |item: Value| {
            let text = item["text"].as_str().unwrap_or_default();
            Ok(if text.contains("retries") {
                json!(0.9)
            } else {
                json!([0.1, "tokens last 15 minutes"])
            })
        });
        let args = VerifyArgs::read(json!({"branch": "task/t1/agent-b"}), store.limits())?;
        let report = Verify::run_with(&store, args, Some(&mut verifier))?;
        // Two facts and the conversation, whose `text` is its transcript.
        assert_eq!((report.verified, report.invalidated), (2, 1));
        let merged = Merge::call(&store, json!({"branch": "task/t1/agent-b"}))?;
        assert_eq!((merged.facts, merged.conversations), (1, 1));
        let facts = Facts::call(&store, json!({"branch": "task/t1", "status": "verified"}))?;
        assert_eq!(facts.len(), 1);
        let branches = Branches::call(&store, json!({}))?;
        let names: Vec<&str> = branches.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["task/t1", "task/t1/agent-b"]);
        assert_eq!(
            CurationEvents::call(&store, json!({"task_id": "t1"}))?.len(),
            5
        );
        Ok(())
    }

    #[test]
    fn bad_arguments_are_named_all_at_once() {
        let store = Store::memory();
        let err = AddConversation::call(
            &store,
            json!({"branch": "tasks/x", "messages": [{"role": "user"}, 3]}),
        )
        .unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["branch", "messages[0].content", "messages[1]"]);
        let err = Verify::call(
            &store,
            json!({"branch": "main", "fact_threshold": 0.3, "invalidate_below": 2.0}),
        )
        .unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["invalidate_below"]);
        let err = AddFacts::call(
            &store,
            json!({"branch": "main", "facts": ["", {"text": "x", "confidence": 3}]}),
        )
        .unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["facts[0].text", "facts[1].confidence"]);
        let mut judge = JsonJudge(|_: Value| Ok(json!("yes")));
        let conversation = store
            .add_conversation(NewConversation {
                branch: "main".into(),
                messages: vec![Message {
                    role: "assistant".into(),
                    content: "I'll do it".into(),
                    ..Message::default()
                }],
                ..NewConversation::default()
            })
            .unwrap();
        let args = CherryPickDecisionsArgs {
            conversation_id: conversation.id,
            target_branch: "main".into(),
        };
        let err = CherryPickDecisions::run_with(&store, args, Some(&mut judge)).unwrap_err();
        assert_eq!(err.problems()[0].field, "judge");
        assert_eq!(store.list_conversations(None, None).unwrap().len(), 1);
    }
}
