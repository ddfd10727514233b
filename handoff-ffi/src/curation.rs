//! Curated memory (docs/design.md §9) as the foreign languages see it: conversations and their
//! messages on branches, facts, what a verification and a merge did, the curation log, and the
//! two pieces of code a caller may plug in: a [`Verifier`] that scores facts and
//! conversations, and a [`DecisionJudge`] that picks a conversation's decision points.
//!
//! Records are typed: a message's tool calls are [`ToolCall`]s (their arguments JSON text), a
//! status or a verdict is an enum. A log entry's `detail` and a verifier's whole item
//! (`VerifyItem.json`, what every binding's verifier reads) are JSON text.

use std::sync::Arc;
use std::time::SystemTime;

use handoff_core as core;
pub use handoff_core::context::Message as ConversationMessage;
use handoff_core::curation;
use serde::{Serialize, Serializer, ser::Error as _};

use crate::error::{HandoffError, Result};
use crate::record::time;

pub use handoff_core::messages::ToolCall;

pub use handoff_core::curation::{
    BranchInfo, Conversation, CurationChange, CurationEvent, Fact, FactStatus, MergeReport,
    PickedTo, Verdict, VerifiedItem, VerifyReport,
};

/// What a verifier is asked about, and what a report line is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum VerifyItemKind {
    /// A fact.
    Fact,
    /// A conversation.
    Conversation,
}

/// A fact as a caller gives it to `Store.add_facts`: its text, and optionally how sure its
/// author was (from 0 to 1) and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, uniffi::Record)]
pub struct NewFact {
    /// What is known; it must say something.
    pub text: String,
    /// How sure its author was, from 0 to 1.
    #[uniffi(default)]
    #[serde(serialize_with = "finite")]
    pub confidence: Option<f64>,
    /// Where it came from (a file, a conversation, a URL).
    #[uniffi(default)]
    pub source: Option<String>,
}

/// A message of a stored conversation: the message, its place, and where it was picked to.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct StoredMessage {
    /// Its place in the conversation, from 1.
    pub seq: u64,
    /// `user`, `assistant`, `tool`, `system`.
    pub role: String,
    /// The text.
    pub content: String,
    /// The tool calls it made.
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message, the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// For a `tool` message, whether the tool failed.
    pub is_error: bool,
    /// When it was said.
    pub at: Option<SystemTime>,
    /// Whether a cherry-pick took it (`cherry_picked_to` is not empty).
    pub is_cherry_picked: bool,
    /// Every cherry-pick that took it.
    pub cherry_picked_to: Vec<PickedTo>,
}

/// What a [`Verifier`] is asked to score: a fact, or a conversation with its messages.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct VerifyItem {
    /// A fact or a conversation.
    pub kind: VerifyItemKind,
    /// The fact's or the conversation's id.
    pub id: String,
    /// What to judge: the fact's text, or the conversation as `role: content` lines.
    pub text: String,
    /// The fact, for a fact.
    pub fact: Option<Fact>,
    /// The conversation, for a conversation.
    pub conversation: Option<Conversation>,
    /// The conversation's messages, for a conversation (empty for a fact).
    pub messages: Vec<StoredMessage>,
    /// The item as JSON text, as every binding's verifier reads it: the fact's or the
    /// conversation's fields with `kind`, `text` and, for a conversation, `messages`.
    pub json: String,
}

/// A verifier's answer: a score from 0 (wrong) to 1 (certainly right), and why.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Score {
    /// From 0 to 1; NaN or anything outside is reported and leaves the item as it was.
    pub score: f64,
    /// Why, in the verifier's words.
    #[uniffi(default)]
    pub explanation: Option<String>,
}

/// Scores facts and conversations for `Store.verify` (an LLM judge, a test suite, a human):
/// implement it in Swift, Kotlin or Python.
///
/// `verify` is called once per item, outside any transaction, so a slow verifier holds no
/// lock. When it throws, that item is left as it was and its report line carries what was
/// thrown; the other items are verified.
#[uniffi::export(with_foreign)]
pub trait Verifier: Send + Sync {
    /// Who verifies: stored on each item as `verified_by`.
    fn name(&self) -> String;

    /// The score of `item`.
    fn verify(&self, item: VerifyItem) -> Result<Score>;
}

/// Decides which messages `Store.cherry_pick_decisions` takes, in place of the heuristics:
/// implement it in Swift, Kotlin or Python.
///
/// It is asked about every message of the conversation, in order. When it throws, the pick
/// stops and writes nothing: a `HandoffError` comes out as thrown, anything else as
/// `HandoffError.Foreign` with its text.
#[uniffi::export(with_foreign)]
pub trait DecisionJudge: Send + Sync {
    /// Whether `message` (the `index`-th of its conversation, from 0) is a decision point.
    fn is_decision(&self, index: u64, message: ConversationMessage) -> Result<bool>;
}

/// Draws facts from a conversation for `Store.cherry_pick_to_facts`, in place of the
/// heuristics (an LLM): implement it in Swift, Kotlin or Python.
///
/// It is asked once, before anything is written, with the conversation as a verifier reads
/// it. When it throws, nothing is written: a `HandoffError` comes out as thrown, anything else
/// as `HandoffError.Foreign` with its text.
#[uniffi::export(with_foreign)]
pub trait FactExtractor: Send + Sync {
    /// Who draws them: named in the curation log.
    fn name(&self) -> String;

    /// The facts `item` (a conversation with its messages) states.
    fn extract(&self, item: VerifyItem) -> Result<Vec<NewFact>>;
}

/// A foreign [`FactExtractor`] in the core's shape. What it throws is kept, so that the call
/// fails with it rather than with the core's rendering of it.
pub(crate) struct ForeignExtractor {
    extractor: Arc<dyn FactExtractor>,
    name: String,
    thrown: Option<HandoffError>,
}

impl ForeignExtractor {
    pub(crate) fn new(extractor: Arc<dyn FactExtractor>) -> ForeignExtractor {
        let name = extractor.name();
        ForeignExtractor {
            extractor,
            name,
            thrown: None,
        }
    }

    /// The error the call ended with: what the extractor threw, if it threw.
    pub(crate) fn error(&mut self, error: core::Error) -> HandoffError {
        self.thrown.take().unwrap_or_else(|| error.into())
    }
}

impl curation::Extractor for ForeignExtractor {
    fn name(&self) -> &str {
        &self.name
    }

    fn extract(
        &mut self,
        conversation: &curation::Conversation,
        messages: &[curation::StoredMessage],
    ) -> core::Result<Vec<curation::NewFact>> {
        let item = VerifyItem::of(curation::VerifyItem::Conversation(conversation, messages))?;
        let facts = self.extractor.extract(item).map_err(|thrown| {
            let error = thrown_by("extractor", &thrown);
            self.thrown = Some(thrown);
            error
        })?;
        Ok(facts
            .into_iter()
            .map(|f| curation::NewFact {
                text: f.text,
                confidence: f.confidence,
                source: f.source,
            })
            .collect())
    }
}

/// A foreign [`Verifier`] whose throw ends the call (a verified cherry-pick, a bundle's
/// verification): what it throws is kept, so that the call fails with it.
pub(crate) struct StrictVerifier {
    inner: ForeignVerifier,
    thrown: Option<HandoffError>,
}

impl StrictVerifier {
    pub(crate) fn new(verifier: Arc<dyn Verifier>) -> StrictVerifier {
        StrictVerifier {
            inner: ForeignVerifier::new(verifier),
            thrown: None,
        }
    }

    /// The error the call ended with: what the verifier threw, if it threw.
    pub(crate) fn error(&mut self, error: core::Error) -> HandoffError {
        self.thrown.take().unwrap_or_else(|| error.into())
    }
}

impl curation::Verifier for StrictVerifier {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn verify(&mut self, item: curation::VerifyItem<'_>) -> core::Result<curation::Score> {
        let item = VerifyItem::of(item)?;
        let score = self.inner.verifier.verify(item).map_err(|thrown| {
            let error = thrown_by("verifier", &thrown);
            self.thrown = Some(thrown);
            error
        })?;
        Ok(curation::Score {
            score: score.score,
            explanation: score.explanation,
        })
    }
}

/// A foreign [`Verifier`] in the core's shape.
pub(crate) struct ForeignVerifier {
    verifier: Arc<dyn Verifier>,
    name: String,
}

impl ForeignVerifier {
    pub(crate) fn new(verifier: Arc<dyn Verifier>) -> ForeignVerifier {
        let name = verifier.name();
        ForeignVerifier { verifier, name }
    }
}

impl curation::Verifier for ForeignVerifier {
    fn name(&self) -> &str {
        &self.name
    }

    fn verify(&mut self, item: curation::VerifyItem<'_>) -> core::Result<curation::Score> {
        let score = self
            .verifier
            .verify(VerifyItem::of(item)?)
            .map_err(|thrown| thrown_by("verifier", &thrown))?;
        Ok(curation::Score {
            score: score.score,
            explanation: score.explanation,
        })
    }
}

/// A foreign [`DecisionJudge`] in the core's shape. What it throws is kept, so that the pick
/// fails with it rather than with the core's rendering of it.
pub(crate) struct ForeignJudge {
    judge: Arc<dyn DecisionJudge>,
    thrown: Option<HandoffError>,
}

impl ForeignJudge {
    pub(crate) fn new(judge: Arc<dyn DecisionJudge>) -> ForeignJudge {
        ForeignJudge {
            judge,
            thrown: None,
        }
    }

    /// The error a pick ended with: what the judge threw, if it threw.
    pub(crate) fn error(&mut self, error: core::Error) -> HandoffError {
        self.thrown.take().unwrap_or_else(|| error.into())
    }
}

impl curation::Judge for ForeignJudge {
    fn is_decision(&mut self, index: usize, message: &ConversationMessage) -> core::Result<bool> {
        let index = u64::try_from(index).unwrap_or(u64::MAX);
        self.judge
            .is_decision(index, message.clone())
            .map_err(|thrown| {
                let error = thrown_by("judge", &thrown);
                self.thrown = Some(thrown);
                error
            })
    }
}

/// What foreign code threw, as the core's error: a validation error keeps its problems,
/// anything else is a problem of `field` (`verifier`, `judge`) with its text.
fn thrown_by(field: &str, thrown: &HandoffError) -> core::Error {
    match thrown {
        HandoffError::Validation { problems, .. } => core::Error::Validation {
            problems: problems
                .iter()
                .map(|p| core::Problem::new(p.field.clone(), p.rule.clone()))
                .collect(),
        },
        other => core::Error::invalid(field, other.to_string()),
    }
}

/// Serializes a number the core reads, refusing NaN and the infinities, which JSON cannot
/// hold (they would silently become `null`, that is, no value at all).
fn finite<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(n) if !n.is_finite() => Err(S::Error::custom(format!(
            "must be a number from 0 to 1, is {n}"
        ))),
        other => other.serialize(serializer),
    }
}

/// A number argument (a verification's threshold) that must be finite, as [`finite`] checks.
pub(crate) struct Finite(pub(crate) Option<f64>);

impl Serialize for Finite {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        finite(&self.0, serializer)
    }
}

impl VerifyItem {
    /// The item the core asks about, with the JSON every binding's verifier reads.
    fn of(item: curation::VerifyItem<'_>) -> core::Result<VerifyItem> {
        let json = item.to_json()?;
        let text = json["text"].as_str().unwrap_or_default().to_owned();
        let shown = json.to_string();
        Ok(match item {
            curation::VerifyItem::Fact(fact) => VerifyItem {
                kind: VerifyItemKind::Fact,
                id: fact.id.clone(),
                text,
                fact: Some(fact.clone()),
                conversation: None,
                messages: Vec::new(),
                json: shown,
            },
            curation::VerifyItem::Conversation(conversation, messages) => VerifyItem {
                kind: VerifyItemKind::Conversation,
                id: conversation.id.clone(),
                text,
                fact: None,
                conversation: Some(conversation.clone()),
                messages: messages.iter().cloned().map(StoredMessage::from).collect(),
                json: shown,
            },
        })
    }
}

impl From<curation::StoredMessage> for StoredMessage {
    fn from(stored: curation::StoredMessage) -> Self {
        let m = stored.message;
        StoredMessage {
            seq: stored.seq,
            role: m.role,
            content: m.content,
            tool_calls: m.tool_calls,
            tool_call_id: m.tool_call_id,
            is_error: m.is_error,
            at: m.at.map(time),
            is_cherry_picked: stored.is_cherry_picked,
            cherry_picked_to: stored.cherry_picked_to,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{ContextMessage, OpenOptions, Store};

    fn say(role: &str, content: &str) -> ContextMessage {
        ContextMessage {
            role: role.into(),
            content: content.into(),
            tool_calls: vec![],
            tool_call_id: None,
            at: None,
            id: None,
            priority: None,
            is_error: false,
        }
    }

    fn fields(err: HandoffError) -> Vec<String> {
        match err {
            HandoffError::Validation { problems, .. } => {
                problems.into_iter().map(|p| p.field).collect()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    /// Scores by the text, as a foreign verifier would; throws on "flaky", answers NaN on
    /// "nan".
    struct ByText;

    impl Verifier for ByText {
        fn name(&self) -> String {
            "by-text".into()
        }

        fn verify(&self, item: VerifyItem) -> Result<Score> {
            let parsed: serde_json::Value = serde_json::from_str(&item.json).unwrap();
            assert_eq!(parsed["text"], item.text.as_str());
            if item.text.contains("flaky") {
                return Err(HandoffError::Foreign {
                    description: "RuntimeError: the model is down".into(),
                });
            }
            let score = match item.kind {
                VerifyItemKind::Conversation => {
                    assert_eq!(item.messages.len(), 2);
                    0.8
                }
                VerifyItemKind::Fact if item.text.contains("nan") => f64::NAN,
                VerifyItemKind::Fact if item.text.contains("retries") => 0.9,
                VerifyItemKind::Fact => 0.1,
            };
            Ok(Score {
                score,
                explanation: Some("checked".into()),
            })
        }
    }

    /// One description: a fact given here carries the core's fact fields under their names.
    #[test]
    fn a_new_fact_is_the_cores() {
        let ours = NewFact {
            text: "refresh needs retries".into(),
            confidence: Some(0.8),
            source: Some("auth.py".into()),
        };
        let theirs: curation::NewFact =
            serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
        assert_eq!(theirs.confidence, Some(0.8));
        assert_eq!(theirs.source.as_deref(), Some("auth.py"));
    }

    #[test]
    fn a_foreign_verifier_scores_and_its_failures_are_reported() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let branch = || "task/fix-oauth/agent-b".to_owned();
        let conversation = store
            .add_conversation(
                branch(),
                vec![say("user", "fix it"), say("assistant", "let me retry")],
                None,
                None,
                None,
            )
            .unwrap();
        assert_eq!(conversation.task_id.as_deref(), Some("fix-oauth"));
        let fact = |text: &str| NewFact {
            text: text.into(),
            confidence: None,
            source: None,
        };
        let facts = store
            .add_facts(
                branch(),
                vec![
                    fact("refresh needs retries"),
                    fact("tokens last a day"),
                    fact("flaky"),
                    fact("nan"),
                ],
            )
            .unwrap();
        let report = store
            .verify(branch(), Some(Arc::new(ByText)), None, None, None)
            .unwrap();
        assert_eq!(
            (
                report.verified,
                report.invalidated,
                report.unverified,
                report.failed
            ),
            (2, 1, 0, 2)
        );
        let thrown = &report.items[2];
        assert_eq!(thrown.id, facts[2].id);
        let error = thrown.error.as_deref().unwrap();
        assert!(error.contains("the model is down"), "{error}");
        assert!(report.items[3].error.as_deref().unwrap().contains("NaN"));
        let stored = store.facts(branch(), None).unwrap();
        let statuses: Vec<FactStatus> = stored.iter().map(|f| f.status).collect();
        use FactStatus::{Active, Invalidated, Verified};
        assert_eq!(statuses, [Verified, Invalidated, Active, Active]);
        assert_eq!(stored[0].verified_by.as_deref(), Some("by-text"));
        assert_eq!(stored[2].score, None, "a failed item is left as it was");
    }

    #[test]
    fn numbers_json_cannot_hold_are_named() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let err = store
            .verify(
                "main".into(),
                None,
                Some(f64::NAN),
                None,
                Some(f64::INFINITY),
            )
            .unwrap_err();
        assert_eq!(fields(err), ["fact_threshold"]);
        let nan = NewFact {
            text: "x".into(),
            confidence: Some(f64::NAN),
            source: None,
        };
        let err = store.add_facts("main".into(), vec![nan]).unwrap_err();
        assert_eq!(fields(err), ["facts[0].confidence"]);
        assert!(store.facts("main".into(), None).unwrap().is_empty());
    }

    /// Throws what it is given on the second message.
    struct Throws(fn() -> HandoffError);

    impl DecisionJudge for Throws {
        fn is_decision(&self, index: u64, message: ConversationMessage) -> Result<bool> {
            match index {
                0 => Ok(message.role == "user"),
                _ => Err((self.0)()),
            }
        }
    }

    #[test]
    fn what_a_judge_throws_comes_out_as_thrown() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let conversation = store
            .add_conversation(
                "main".into(),
                vec![say("user", "fix it"), say("assistant", "I'll retry")],
                None,
                None,
                None,
            )
            .unwrap();
        let pick = |judge: Throws| {
            store.cherry_pick_decisions(
                conversation.id.clone(),
                "task/t1".into(),
                Some(Arc::new(judge)),
            )
        };
        let err = pick(Throws(|| HandoffError::Foreign {
            description: "ValueError: no".into(),
        }))
        .unwrap_err();
        assert!(
            matches!(err, HandoffError::Foreign { description } if description == "ValueError: no")
        );
        let err = pick(Throws(|| HandoffError::invalid("mine", "no"))).unwrap_err();
        assert_eq!(fields(err), ["mine"]);
        assert_eq!(store.list_conversations(None, None).unwrap().len(), 1);
    }
}
