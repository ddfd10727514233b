//! Curated memory in the store (docs/design.md §9): conversations with their messages, and facts, on
//! branches; cherry-picks, verification and merges. Each is a document: a conversation keyed
//! by its id, each message by `<conversation>/<seq, 10 digits>`, each cherry-pick beside its
//! source (which messages it took), each fact under its branch ([`facts_of`]), so that a
//! branch's facts are one key prefix.
//!
//! What to pick, verify and move up is [`crate::curation`]'s to decide; this module reads what
//! that needs and writes what it decided, each change in one transaction. A verifier or a
//! judge (an LLM, slow) is called before the transaction that writes its verdicts, never inside
//! one.

use std::collections::{BTreeMap, HashSet};

use crate::context::Message;
use crate::store::{Doc, Store, Tx, new_id};
use crate::store::{body, number_key, numbered, parsed};
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::curation::{
    self, Branch, BranchInfo, Conversation, CurationChange, CurationEvent, Extractor, Fact,
    FactStatus, MergeReport, NewFact, PickedTo, StoredMessage, Thresholds, Verdict, VerifiedItem,
    Verifier, VerifyItem, VerifyReport,
};
use crate::error::{Error, Result};
use crate::replay::store::DECISIONS_TITLE;
use crate::validate::{self, Collector, Limits};

/// The kind of a conversation's document, keyed by its id.
pub(crate) const CONVERSATION: &str = "conversation";
/// The kind of a message's document, keyed `<conversation>/<seq, 10 digits>`.
const MESSAGE: &str = "message";
/// The kind of a cherry-pick's document, keyed `<source>/<pick's conversation>`.
const PICK: &str = "cherry_pick";

/// A cherry-pick, kept beside its source: where it went, and which messages it took (as runs
/// of consecutive `seq`s, so that a range of 10,000 messages is one pair).
#[derive(serde::Serialize, serde::Deserialize)]
struct PickRecord {
    picked: PickedTo,
    seqs: Vec<(u64, u64)>,
}

/// `seqs` (ascending) as runs of consecutive numbers.
fn runs(seqs: &[u64]) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &seq in seqs {
        match runs.last_mut() {
            Some((_, to)) if *to + 1 == seq => *to = seq,
            _ => runs.push((seq, seq)),
        }
    }
    runs
}

/// The kind of a curation log entry's document, keyed by [`events_of`] and a time-ordered
/// id, so that a task's entries are one key prefix, in the order they were written.
const EVENT: &str = "curation_event";

/// The key prefix of the log of a task's branches (`task/<task>/`), or of `main` (`main/`).
fn events_of(task_id: Option<&str>) -> String {
    task_id.map_or_else(|| "main/".to_owned(), |task| format!("task/{task}/"))
}

/// Appends an entry to the curation log, in the transaction of the change it records.
pub(crate) fn log(
    tx: &mut dyn Tx,
    kind: CurationChange,
    branch: &Branch,
    detail: serde_json::Value,
    at: DateTime<Utc>,
) -> Result<()> {
    let event = CurationEvent {
        at,
        kind,
        branch: branch.clone(),
        detail,
    };
    let doc = Doc {
        version: 1,
        body: body(&event)?,
    };
    let key = format!("{}{}", events_of(branch.task_id()), new_id(at));
    tx.insert_doc(EVENT, &key, &doc)
}

/// The kind of a fact's document, keyed by [`fact_key`].
pub(crate) const FACT: &str = "fact";

/// The most messages one call writes (one transaction holds them all).
pub const MAX_MESSAGES_PER_CALL: usize = 100_000;

/// The key prefix of a branch's facts: its number of segments, then its name, so that no
/// branch's prefix is another's (`2/task/t/` never matches `3/task/t/agent/…`) and every part
/// of a key is an id (as a folder of files needs).
pub(crate) fn facts_of(branch: &Branch) -> String {
    format!("{}/{branch}/", branch.as_str().split('/').count())
}

/// The key prefix of the facts of every agent's branch of the task whose branch is `task`
/// (one segment more than its own).
pub(crate) fn agents_facts_of(task: &Branch) -> String {
    format!("{}/{task}/", task.as_str().split('/').count() + 1)
}

/// The key prefixes of a task's facts: those on its branch, then those on its agents'.
pub(crate) fn task_facts_of(task: &Branch) -> [String; 2] {
    [facts_of(task), agents_facts_of(task)]
}

/// Sorts facts oldest first (ties by id), the order they are shown in.
pub(crate) fn oldest_first(facts: &mut [Fact]) {
    facts.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
}

pub(crate) fn fact_key(branch: &Branch, id: &str) -> String {
    format!("{}{id}", facts_of(branch))
}

fn no_conversation(id: &str) -> Error {
    Error::NotFound {
        what: "conversation",
        id: id.to_owned(),
    }
}

/// A new conversation, as [`Store::add_conversation`] takes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewConversation {
    /// The branch it goes on (`main`, `task/<task>`, `task/<task>/<agent>`).
    pub branch: String,
    /// Its messages, in order.
    pub messages: Vec<Message>,
    /// What it is about.
    pub title: Option<String>,
    /// The task it belongs to (by default the branch's).
    pub task_id: Option<String>,
    /// The agent that had it (by default the branch's).
    pub agent: Option<String>,
}

/// Every problem of `messages` (each text within the limits), named `messages[i]`.
pub(crate) fn check_messages(c: &mut Collector, limits: &Limits, messages: &[Message]) {
    for (i, message) in messages.iter().enumerate() {
        validate::text_named(
            c,
            limits,
            || format!("messages[{i}].content"),
            &message.content,
        );
        if !matches!(
            message.role.as_str(),
            "user" | "assistant" | "system" | "tool"
        ) {
            c.push(
                format!("messages[{i}].role"),
                "must be user, assistant, system or tool",
            );
        }
    }
}

/// Writes `messages` as the messages `first..` of `conversation`.
pub(crate) fn insert_messages(
    tx: &mut dyn Tx,
    conversation: &str,
    first: u64,
    messages: impl IntoIterator<Item = Message>,
) -> Result<u64> {
    let bodies = messages
        .into_iter()
        .map(|message| body(&message))
        .collect::<Result<Vec<_>>>()?;
    insert_bodies(tx, conversation, first, bodies)
}

/// Writes message documents' bodies (a [`Message`] each, as JSON) as the messages `first..` of
/// `conversation`. A message's body holds no `seq` (its key does) and no picks (they are kept
/// beside it), so a copy writes the body as it was read.
fn insert_bodies(
    tx: &mut dyn Tx,
    conversation: &str,
    first: u64,
    bodies: impl IntoIterator<Item = String>,
) -> Result<u64> {
    let mut seq = first;
    for body in bodies {
        let doc = Doc { version: 1, body };
        tx.insert_doc(MESSAGE, &number_key(conversation, seq), &doc)?;
        seq += 1;
    }
    Ok(seq - first)
}

/// A conversation's document, locked for the transaction.
fn conversation_in(tx: &mut dyn Tx, id: &str) -> Result<(Conversation, u64)> {
    let doc = tx
        .doc(CONVERSATION, id)?
        .ok_or_else(|| no_conversation(id))?;
    Ok((parsed("conversation", &doc)?, doc.version))
}

pub(crate) fn write_conversation(
    tx: &mut dyn Tx,
    conversation: &Conversation,
    version: u64,
) -> Result<()> {
    let doc = Doc {
        version,
        body: body(conversation)?,
    };
    if version == 1 {
        crate::context::knowledge::insert_conversation(tx, conversation)
    } else {
        tx.update_doc(CONVERSATION, &conversation.id, &doc)
    }
}

/// A verifier's verdict on a pick, written with it.
struct Judged {
    score: curation::Score,
    verdict: Verdict,
    by: String,
}

/// What a cherry-pick takes from its source: the messages' positions (indexes from 0).
enum Pick {
    Range(Option<u64>, Option<u64>),
    Indexes(Vec<usize>),
}

impl Store {
    /// Writes a conversation on a branch (created on first use), its messages numbered from 1.
    /// Every problem at once; nothing written on refusal.
    pub fn add_conversation(&self, new: NewConversation) -> Result<Conversation> {
        let now = self.clock.now();
        let branch = Branch::parse(&new.branch);
        let mut c = Collector::default();
        if let Err(err) = &branch {
            err.problems()
                .iter()
                .for_each(|p| c.push(&p.field, &p.rule));
        }
        c.opt_ident("task_id", new.task_id.as_deref());
        c.opt_ident("agent", new.agent.as_deref());
        if let Some(title) = &new.title {
            validate::text(&mut c, &self.limits, "title", title);
        }
        if new.messages.len() > MAX_MESSAGES_PER_CALL {
            c.push(
                "messages",
                format!(
                    "must be at most {MAX_MESSAGES_PER_CALL} in one call: append the rest with \
                     append_messages"
                ),
            );
        }
        check_messages(&mut c, &self.limits, &new.messages);
        c.finish()?;
        let branch = branch?;
        let conversation = Conversation {
            id: new_id(now),
            task_id: new.task_id.or_else(|| branch.task_id().map(str::to_owned)),
            agent: new
                .agent
                .or_else(|| branch.as_str().splitn(3, '/').nth(2).map(str::to_owned)),
            branch,
            title: new.title,
            message_count: new.messages.len() as u64,
            verification_status: Verdict::Unverified,
            verification_score: None,
            explanation: None,
            verified_by: None,
            cherry_picked_from: None,
            origin: None,
            promoted: false,
            created_at: now,
        };
        self.backend.write(&mut |tx| {
            write_conversation(tx, &conversation, 1)?;
            insert_messages(tx, &conversation.id, 1, new.messages.iter().cloned())?;
            let detail = json!({"conversation_id": conversation.id,
                                "messages": conversation.message_count});
            log(
                tx,
                CurationChange::ConversationAdded,
                &conversation.branch,
                detail,
                now,
            )
        })?;
        Ok(conversation)
    }

    /// Adds messages at the end of a conversation.
    pub fn append_messages(&self, id: &str, messages: Vec<Message>) -> Result<Conversation> {
        validate::ident("id", id)?;
        let mut c = Collector::default();
        if messages.len() > MAX_MESSAGES_PER_CALL {
            c.push(
                "messages",
                format!("must be at most {MAX_MESSAGES_PER_CALL} in one call"),
            );
        }
        check_messages(&mut c, &self.limits, &messages);
        c.finish()?;
        let now = self.clock.now();
        let mut updated = None;
        self.backend.write(&mut |tx| {
            let (mut conversation, version) = conversation_in(tx, id)?;
            let first = conversation.message_count + 1;
            let added = insert_messages(tx, id, first, messages.iter().cloned())?;
            conversation.message_count += added;
            write_conversation(tx, &conversation, version + 1)?;
            let detail = json!({"conversation_id": id, "messages": added});
            log(
                tx,
                CurationChange::MessagesAppended,
                &conversation.branch,
                detail,
                now,
            )?;
            updated = Some(conversation);
            Ok(())
        })?;
        updated.ok_or_else(|| Error::storage("write returned no conversation"))
    }

    /// The conversation with this id.
    pub fn get_conversation(&self, id: &str) -> Result<Conversation> {
        validate::ident("id", id)?;
        let doc = self
            .backend
            .doc(CONVERSATION, id)?
            .ok_or_else(|| no_conversation(id))?;
        parsed("conversation", &doc)
    }

    /// The messages `from_seq..=to_seq` of a conversation (all of them by default), in order.
    pub fn messages(
        &self,
        id: &str,
        from_seq: Option<u64>,
        to_seq: Option<u64>,
    ) -> Result<Vec<StoredMessage>> {
        let conversation = self.get_conversation(id)?;
        if conversation.message_count == 0 && from_seq.is_none() && to_seq.is_none() {
            return Ok(Vec::new());
        }
        let count = usize::try_from(conversation.message_count).unwrap_or(usize::MAX);
        let range = curation::seq_range(count, from_seq, to_seq)?;
        let after = (*range.start() > 1).then(|| number_key(id, range.start() - 1));
        let want = usize::try_from(range.end() - range.start() + 1).unwrap_or(usize::MAX);
        let mut messages: Vec<StoredMessage> = self
            .backend
            .docs(MESSAGE, &format!("{id}/"), after.as_deref(), want)?
            .iter()
            .map(|(key, doc)| {
                Ok(StoredMessage {
                    seq: numbered(key)?,
                    message: parsed("message", doc)?,
                    is_cherry_picked: false,
                    cherry_picked_to: Vec::new(),
                })
            })
            .collect::<Result<_>>()?;
        let picks: Vec<PickRecord> = self
            .backend
            .docs(PICK, &format!("{id}/"), None, usize::MAX)?
            .iter()
            .map(|(_, doc)| parsed("cherry-pick", doc))
            .collect::<Result<_>>()?;
        for message in &mut messages {
            message.cherry_picked_to = picks
                .iter()
                .filter(|pick| {
                    pick.seqs
                        .iter()
                        .any(|(from, to)| (*from..=*to).contains(&message.seq))
                })
                .map(|pick| pick.picked.clone())
                .collect();
            message.is_cherry_picked = !message.cherry_picked_to.is_empty();
        }
        Ok(messages)
    }

    /// The conversations of a branch, of a task, or of the store, oldest first.
    pub fn list_conversations(
        &self,
        branch: Option<&str>,
        task_id: Option<&str>,
    ) -> Result<Vec<Conversation>> {
        let branch = branch.map(Branch::parse).transpose()?;
        if let Some(task) = task_id {
            validate::ident("task_id", task)?;
        }
        let mut found: Vec<Conversation> = match task_id {
            // A task's conversations come from its index, not from every conversation.
            Some(task) => crate::context::knowledge::task_conversations(&*self.backend, task)?,
            None => self
                .backend
                .docs(CONVERSATION, "", None, usize::MAX)?
                .iter()
                .map(|(_, doc)| parsed::<Conversation>("conversation", doc))
                .collect::<Result<_>>()?,
        };
        found.retain(|c| {
            branch.as_ref().is_none_or(|b| c.branch == *b)
                && task_id.is_none_or(|t| c.task_id.as_deref() == Some(t))
        });
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(found)
    }

    /// Copies the messages `from_seq..=to_seq` of a conversation (all of it by default) into
    /// a new conversation on `target_branch`; the source messages are marked picked.
    pub fn cherry_pick(
        &self,
        id: &str,
        target_branch: &str,
        from_seq: Option<u64>,
        to_seq: Option<u64>,
        title: Option<&str>,
    ) -> Result<Conversation> {
        self.pick(
            id,
            target_branch,
            Pick::Range(from_seq, to_seq),
            title,
            None,
        )
    }

    /// [`cherry_pick`](Self::cherry_pick), and the verification gate on what it picked (the
    /// seed's `cherry_pick_conversation(verify=True)`): `verifier` scores the new conversation
    /// (its messages as they will be copied) before anything is written, and the pick is
    /// written with its verdict under `thresholds` (`verified` from `conversation_threshold`,
    /// `invalidated` below `invalidate_below`). When the verifier fails, or scores with NaN or
    /// outside 0..1, nothing is written.
    #[allow(clippy::too_many_arguments)] // the pick's own arguments, and the gate's two
    pub fn cherry_pick_verified(
        &self,
        id: &str,
        target_branch: &str,
        from_seq: Option<u64>,
        to_seq: Option<u64>,
        title: Option<&str>,
        verifier: &mut dyn Verifier,
        thresholds: &Thresholds,
    ) -> Result<Conversation> {
        thresholds.check()?;
        let target = Branch::named("target_branch", target_branch)?;
        let source = self.get_conversation(id)?;
        let messages = self.messages(id, from_seq, to_seq)?;
        let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
            return Err(Error::invalid("conversation", "has no messages to pick"));
        };
        // The range as read, so that the pick copies exactly what the verifier saw even if
        // messages are appended meanwhile.
        let range = (Some(first.seq), Some(last.seq));
        let now = self.clock.now();
        // What the pick will write, as the verifier reads it: the copied messages numbered
        // from 1, no picks of their own yet.
        let copied: Vec<StoredMessage> = messages
            .iter()
            .zip(1..)
            .map(|(m, seq)| StoredMessage {
                seq,
                message: m.message.clone(),
                is_cherry_picked: false,
                cherry_picked_to: Vec::new(),
            })
            .collect();
        let prospect = Conversation {
            id: String::new(),
            branch: target.clone(),
            title: title.map(str::to_owned).or_else(|| source.title.clone()),
            task_id: target
                .task_id()
                .map(str::to_owned)
                .or_else(|| source.task_id.clone()),
            agent: source.agent.clone(),
            message_count: copied.len() as u64,
            verification_status: Verdict::Unverified,
            verification_score: None,
            explanation: None,
            verified_by: None,
            cherry_picked_from: Some(source.id.clone()),
            origin: None,
            promoted: false,
            created_at: now,
        };
        let by = verifier.name().to_owned();
        self.check_text("verifier.name", &by)?;
        // Asked before the write, never inside it: a verifier may take seconds.
        let answer = verifier.verify(VerifyItem::Conversation(&prospect, &copied))?;
        curation::check_score(answer.score)?;
        if let Some(explanation) = &answer.explanation {
            self.check_text("explanation", explanation)?;
        }
        let verdict = thresholds.conversation_verdict(answer.score);
        let judged = Judged {
            score: answer,
            verdict,
            by,
        };
        self.pick(
            id,
            target_branch,
            Pick::Range(range.0, range.1),
            title,
            Some(&judged),
        )
    }

    /// Draws facts from a conversation (the seed's `cherry_pick_to_facts`, the bridge from
    /// history to memory) and writes them on `target_branch` as candidates (`active`), for
    /// the gate to verify later: by `extractor` (an LLM), or without one by the heuristics
    /// ([`curation::extract_facts`]). The extractor is asked before anything is written; when
    /// it fails, or draws a fact that breaks the rules of a fact (named `facts[i].text`, ...),
    /// nothing is. A conversation that states nothing writes nothing and returns no facts.
    pub fn cherry_pick_to_facts(
        &self,
        id: &str,
        target_branch: &str,
        extractor: Option<&mut dyn Extractor>,
    ) -> Result<Vec<Fact>> {
        let target = Branch::named("target_branch", target_branch)?;
        let conversation = self.get_conversation(id)?;
        let messages = self.messages(id, None, None)?;
        let (by, facts) = match extractor {
            Some(extractor) => {
                let by = extractor.name().to_owned();
                self.check_text("extractor.name", &by)?;
                (by, extractor.extract(&conversation, &messages)?)
            }
            None => {
                let plain: Vec<Message> = messages.iter().map(|m| m.message.clone()).collect();
                ("heuristics".to_owned(), curation::extract_facts(id, &plain))
            }
        };
        NewFact::check_all(&facts, &self.limits)?;
        if facts.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let made: Vec<Fact> = facts
            .into_iter()
            .map(|new| Fact {
                id: new_id(now),
                branch: target.clone(),
                text: new.text,
                confidence: new.confidence,
                // Where it came from, unless the extractor said more precisely.
                source: new.source.or_else(|| Some(format!("conversation:{id}"))),
                status: FactStatus::Active,
                score: None,
                explanation: None,
                verified_by: None,
                verified_at: None,
                origin: None,
                created_at: now,
            })
            .collect();
        self.backend.write(&mut |tx| {
            for fact in &made {
                crate::context::knowledge::insert_fact(tx, fact)?;
            }
            let ids: Vec<&str> = made.iter().map(|f| f.id.as_str()).collect();
            let detail = json!({"facts": ids, "from_conversation": id, "extracted_by": by});
            log(tx, CurationChange::FactsAdded, &target, detail, now)
        })?;
        Ok(made)
    }
    /// Copies a conversation's decision points (the seed's heuristics, or `judge`) into a new
    /// conversation on `target_branch`. The judge is asked before anything is written; when it
    /// fails, nothing is.
    pub fn cherry_pick_decisions(
        &self,
        id: &str,
        target_branch: &str,
        judge: Option<&mut dyn curation::Judge>,
    ) -> Result<Conversation> {
        Branch::named("target_branch", target_branch)?;
        let messages: Vec<Message> = self
            .messages(id, None, None)?
            .into_iter()
            .map(|m| m.message)
            .collect();
        let picked = curation::decision_points(&messages, judge)?;
        let title = format!("{DECISIONS_TITLE}{id}");
        self.pick(id, target_branch, Pick::Indexes(picked), Some(&title), None)
    }

    /// Copies a conversation's tool-call sequences (each call with its results) into a new
    /// conversation on `target_branch`.
    pub fn cherry_pick_tools(&self, id: &str, target_branch: &str) -> Result<Conversation> {
        Branch::named("target_branch", target_branch)?;
        let messages: Vec<Message> = self
            .messages(id, None, None)?
            .into_iter()
            .map(|m| m.message)
            .collect();
        let picked = curation::tool_sequences(&messages).concat();
        let title = format!("Tool sequences of {id}");
        self.pick(id, target_branch, Pick::Indexes(picked), Some(&title), None)
    }

    fn pick(
        &self,
        id: &str,
        target_branch: &str,
        pick: Pick,
        title: Option<&str>,
        judged: Option<&Judged>,
    ) -> Result<Conversation> {
        validate::ident("id", id)?;
        let target = Branch::named("target_branch", target_branch)?;
        if let Some(title) = title {
            let mut c = Collector::default();
            validate::text(&mut c, &self.limits, "title", title);
            c.finish()?;
        }
        let now = self.clock.now();
        let new_id = new_id(now);
        let mut made = None;
        self.backend.write(&mut |tx| {
            let (source, _) = conversation_in(tx, id)?;
            let count = usize::try_from(source.message_count).unwrap_or(usize::MAX);
            let seqs: Vec<u64> = match &pick {
                Pick::Range(from, to) => curation::seq_range(count, *from, *to)?.collect(),
                Pick::Indexes(indexes) => indexes.iter().map(|i| *i as u64 + 1).collect(),
            };
            if seqs.is_empty() {
                return Err(Error::invalid(
                    "conversation",
                    "has no messages of that kind to pick",
                ));
            }
            // The picked messages copied as they are, a run of consecutive ones at a time (in
            // the database where the backend can); the pick itself is one document beside them
            // (marking each message would write every picked message twice).
            let mut copied = 0;
            for run in runs(&seqs) {
                copied += tx.copy_numbered_docs(MESSAGE, id, run, &new_id, copied + 1)?;
            }
            let record = PickRecord {
                picked: PickedTo {
                    conversation_id: new_id.clone(),
                    branch: target.clone(),
                    picked_at: now,
                },
                seqs: runs(&seqs),
            };
            let doc = Doc {
                version: 1,
                body: body(&record)?,
            };
            tx.insert_doc(PICK, &format!("{id}/{new_id}"), &doc)?;
            let conversation = Conversation {
                id: new_id.clone(),
                branch: target.clone(),
                title: title.map(str::to_owned).or_else(|| source.title.clone()),
                task_id: target
                    .task_id()
                    .map(str::to_owned)
                    .or_else(|| source.task_id.clone()),
                agent: source.agent.clone(),
                message_count: copied,
                verification_status: judged.map_or(Verdict::Unverified, |j| j.verdict),
                verification_score: judged.map(|j| j.score.score),
                explanation: judged.and_then(|j| j.score.explanation.clone()),
                verified_by: judged.map(|j| j.by.clone()),
                cherry_picked_from: Some(source.id.clone()),
                origin: None,
                promoted: false,
                created_at: now,
            };
            write_conversation(tx, &conversation, 1)?;
            let detail = json!({"conversation_id": new_id, "from_conversation": id,
                                "messages": conversation.message_count});
            log(tx, CurationChange::CherryPicked, &target, detail, now)?;
            if let Some(judged) = judged {
                let detail = json!({"conversation_id": new_id, "verified_by": judged.by,
                                    "score": judged.score.score, "verdict": judged.verdict});
                log(tx, CurationChange::Verified, &target, detail, now)?;
            }
            made = Some(conversation);
            Ok(())
        })?;
        made.ok_or_else(|| Error::storage("write returned no conversation"))
    }

    /// Writes facts on a branch (status `active`), checked whole first.
    pub fn add_facts(&self, branch: &str, facts: Vec<NewFact>) -> Result<Vec<Fact>> {
        let branch = Branch::parse(branch)?;
        NewFact::check_all(&facts, &self.limits)?;
        let now = self.clock.now();
        let made: Vec<Fact> = facts
            .into_iter()
            .map(|new| Fact {
                id: new_id(now),
                branch: branch.clone(),
                text: new.text,
                confidence: new.confidence,
                source: new.source,
                status: FactStatus::Active,
                score: None,
                explanation: None,
                verified_by: None,
                verified_at: None,
                origin: None,
                created_at: now,
            })
            .collect();
        self.backend.write(&mut |tx| {
            for fact in &made {
                crate::context::knowledge::insert_fact(tx, fact)?;
            }
            let ids: Vec<&str> = made.iter().map(|f| f.id.as_str()).collect();
            log(
                tx,
                CurationChange::FactsAdded,
                &branch,
                json!({"facts": ids}),
                now,
            )
        })?;
        Ok(made)
    }

    /// The facts of a branch, oldest first, optionally only those in `status`.
    pub fn facts(&self, branch: &str, status: Option<FactStatus>) -> Result<Vec<Fact>> {
        let branch = Branch::parse(branch)?;
        let mut facts = self.facts_under(&[facts_of(&branch)], |f| {
            status.is_none_or(|s| f.status == s)
        })?;
        oldest_first(&mut facts);
        Ok(facts)
    }

    /// The facts under each of `prefixes` (in key order, one prefix after the other) that
    /// `keep` keeps.
    pub(crate) fn facts_under(
        &self,
        prefixes: &[String],
        keep: impl Fn(&Fact) -> bool,
    ) -> Result<Vec<Fact>> {
        let mut facts = Vec::new();
        for prefix in prefixes {
            for (_, doc) in self.backend.docs(FACT, prefix, None, usize::MAX)? {
                let fact: Fact = parsed("fact", &doc)?;
                if keep(&fact) {
                    facts.push(fact);
                }
            }
        }
        Ok(facts)
    }

    /// Every branch that holds something, with its parent, in name order.
    pub fn branches(&self) -> Result<Vec<BranchInfo>> {
        let mut names = std::collections::BTreeSet::new();
        for (_, doc) in self.backend.docs(FACT, "", None, usize::MAX)? {
            names.insert(parsed::<Fact>("fact", &doc)?.branch);
        }
        for conversation in self.list_conversations(None, None)? {
            names.insert(conversation.branch);
        }
        Ok(names
            .into_iter()
            .map(|name| BranchInfo {
                parent: name.parent(),
                name,
            })
            .collect())
    }

    /// Scores a branch's facts and conversations with `verifier` and stores the verdicts in one
    /// transaction. An item the verifier fails on, or scores with NaN or outside 0..1, is left
    /// as it was and reported. Without a verifier every score is the neutral 0.5 and nothing
    /// is written: the report lists what a judge would score, and no verdict is given or
    /// undone (a judge's later run still finds every item unjudged).
    pub fn verify(
        &self,
        branch: &str,
        verifier: Option<&mut dyn Verifier>,
        thresholds: &Thresholds,
    ) -> Result<VerifyReport> {
        thresholds.check()?;
        let branch = Branch::parse(branch)?;
        // A task's branch holds its agents' branches: verifying it also judges the facts its
        // agents wrote that no judge has scored yet (seed 001 §8 step 7 verifies `task/<task>`,
        // "all facts", after its agents wrote on theirs); verdicts given on an agent's branch
        // stand, and an agent's conversations reach the task by a cherry-pick, not wholesale.
        let is_task = branch.task_id().is_some() && branch.parent() == Some(Branch::main());
        let facts = if is_task {
            let mut facts = self.facts_under(&task_facts_of(&branch), |f| {
                f.branch == branch || f.verified_by.is_none()
            })?;
            oldest_first(&mut facts);
            facts
        } else {
            self.facts(branch.as_str(), None)?
        };
        let conversations = self.list_conversations(Some(branch.as_str()), None)?;
        let judged = verifier.is_some();
        let by = verifier.as_ref().map_or("neutral", |v| v.name()).to_owned();
        // Stored on every item it scores: held to a record field's size like its answers.
        self.check_text("verifier.name", &by)?;
        let mut report = VerifyReport {
            branch: Some(branch.clone()),
            ..VerifyReport::default()
        };
        let mut verifier = verifier;
        let mut score = |item: VerifyItem<'_>| -> Result<curation::Score> {
            match verifier.as_mut() {
                Some(v) => {
                    let answer = v.verify(item)?;
                    curation::check_score(answer.score)?;
                    if let Some(explanation) = &answer.explanation {
                        self.check_text("explanation", explanation)?;
                    }
                    Ok(answer)
                }
                None => Ok(curation::Score {
                    score: curation::NEUTRAL_SCORE,
                    explanation: None,
                }),
            }
        };
        // Scored first, outside any transaction: a verifier may take seconds per item.
        let mut fact_scores = BTreeMap::new();
        for fact in facts
            .iter()
            .filter(|f| !matches!(f.status, FactStatus::Promoted | FactStatus::Superseded))
        {
            let outcome = score(VerifyItem::Fact(fact));
            let verdict = outcome
                .as_ref()
                .ok()
                .map(|s| thresholds.fact_verdict(s.score));
            report.items.push(item("fact", &fact.id, &outcome, verdict));
            if let Ok(answer) = outcome {
                fact_scores.insert(fact_key(&fact.branch, &fact.id), (answer, verdict));
            }
        }
        let mut conversation_scores = BTreeMap::new();
        for conversation in &conversations {
            let messages = self.messages(&conversation.id, None, None)?;
            let outcome = score(VerifyItem::Conversation(conversation, &messages));
            let verdict = outcome
                .as_ref()
                .ok()
                .map(|s| thresholds.conversation_verdict(s.score));
            report
                .items
                .push(item("conversation", &conversation.id, &outcome, verdict));
            if let Ok(answer) = outcome {
                conversation_scores.insert(conversation.id.clone(), (answer, verdict));
            }
        }
        for it in &report.items {
            match it.verdict {
                Some(Verdict::Verified) => report.verified += 1,
                Some(Verdict::Invalidated) => report.invalidated += 1,
                Some(Verdict::Unverified) => report.unverified += 1,
                None => report.failed += 1,
            }
        }
        if !judged {
            return Ok(report);
        }
        let now = self.clock.now();
        self.backend.write(&mut |tx| {
            for (key, (answer, verdict)) in &fact_scores {
                let Some(doc) = tx.doc(FACT, key)? else {
                    continue;
                };
                let mut fact: Fact = parsed("fact", &doc)?;
                if let Some(verdict) = verdict {
                    fact.status = fact.status.after(*verdict);
                }
                fact.score = Some(answer.score);
                fact.explanation.clone_from(&answer.explanation);
                fact.verified_by = Some(by.clone());
                fact.verified_at = Some(now);
                let updated = Doc {
                    version: doc.version + 1,
                    body: body(&fact)?,
                };
                tx.update_doc(FACT, key, &updated)?;
            }
            for (id, (answer, verdict)) in &conversation_scores {
                let Some(doc) = tx.doc(CONVERSATION, id)? else {
                    continue;
                };
                let mut conversation: Conversation = parsed("conversation", &doc)?;
                if let Some(verdict) = verdict {
                    conversation.verification_status = *verdict;
                }
                conversation.verification_score = Some(answer.score);
                conversation.explanation.clone_from(&answer.explanation);
                conversation.verified_by = Some(by.clone());
                write_conversation(tx, &conversation, doc.version + 1)?;
            }
            let detail = json!({"verified_by": by, "verified": report.verified,
                                "invalidated": report.invalidated,
                                "unverified": report.unverified, "failed": report.failed});
            log(tx, CurationChange::Verified, &branch, detail, now)
        })?;
        Ok(report)
    }

    /// Moves a branch's verified knowledge into its parent (or `into`): verified facts are
    /// copied (their sources become `promoted`), verified or cherry-picked conversations are
    /// copied with their messages; everything else stays. Merging twice copies nothing more.
    pub fn merge(&self, branch: &str, into: Option<&str>) -> Result<MergeReport> {
        let from = Branch::parse(branch)?;
        let into = match into {
            Some(name) => Branch::named("into", name)?,
            None => from.parent().ok_or_else(|| {
                Error::invalid("into", "main has no parent: name the branch to merge into")
            })?,
        };
        if into == from {
            return Err(Error::invalid("into", "must not be the merged branch"));
        }
        let now = self.clock.now();
        let mut report = MergeReport::default();
        self.backend.write(&mut |tx| {
            report = merge_in(tx, &from, &into, now)?;
            Ok(())
        })?;
        Ok(report)
    }
}

/// [`Store::merge`] inside a write: what completing a task with `merge_to_main` does to each
/// of its branches, in the task's transaction.
pub(crate) fn merge_in(
    tx: &mut dyn Tx,
    from: &Branch,
    into: &Branch,
    now: DateTime<Utc>,
) -> Result<MergeReport> {
    let mut report = MergeReport {
        branch: Some(from.clone()),
        into: Some(into.clone()),
        ..MergeReport::default()
    };
    let facts: Vec<Fact> = tx
        .docs(FACT, &facts_of(from))?
        .iter()
        .map(|(_, doc)| parsed::<Fact>("fact", doc))
        .collect::<Result<_>>()?;
    let mut origins: HashSet<String> = tx
        .docs(FACT, &facts_of(into))?
        .iter()
        .filter_map(|(_, doc)| parsed::<Fact>("fact", doc).ok()?.origin)
        .collect();
    let conversations: Vec<Conversation> = tx
        .docs(CONVERSATION, "")?
        .iter()
        .map(|(_, doc)| parsed::<Conversation>("conversation", doc))
        .collect::<Result<Vec<_>>>()?;
    origins.extend(
        conversations
            .iter()
            .filter(|c| c.branch == *into)
            .filter_map(|c| c.origin.clone()),
    );
    let states: Vec<curation::ConversationState> = conversations
        .iter()
        .filter(|c| c.branch == *from)
        .map(|c| curation::ConversationState {
            id: c.id.clone(),
            verdict: (c.verification_status != Verdict::Unverified)
                .then_some(c.verification_status),
            cherry_picked: c.cherry_picked_from.is_some(),
        })
        .collect();
    let plan = curation::merge_plan(&facts, &states, &origins);
    report.kept = plan.kept.len() as u64;
    for id in &plan.facts {
        let Some(source) = facts.iter().find(|f| f.id == *id) else {
            continue;
        };
        let copy = Fact {
            id: new_id(now),
            branch: into.clone(),
            origin: Some(source.id.clone()),
            created_at: now,
            ..source.clone()
        };
        crate::context::knowledge::insert_fact(tx, &copy)?;
        let key = fact_key(from, &source.id);
        let current = tx
            .doc(FACT, &key)?
            .ok_or_else(|| Error::storage(format!("fact {key} is missing")))?;
        let promoted = Fact {
            status: FactStatus::Promoted,
            ..source.clone()
        };
        let doc = Doc {
            version: current.version + 1,
            body: body(&promoted)?,
        };
        tx.update_doc(FACT, &key, &doc)?;
        report.facts += 1;
    }
    for id in &plan.conversations {
        let (source, version) = conversation_in(tx, id)?;
        let copy = Conversation {
            id: new_id(now),
            branch: into.clone(),
            origin: Some(source.id.clone()),
            promoted: false,
            created_at: now,
            ..source.clone()
        };
        let bodies = tx
            .docs(MESSAGE, &format!("{id}/"))?
            .into_iter()
            .map(|(_, doc)| doc.body);
        write_conversation(tx, &copy, 1)?;
        insert_bodies(tx, &copy.id, 1, bodies)?;
        let promoted = Conversation {
            promoted: true,
            ..source
        };
        write_conversation(tx, &promoted, version + 1)?;
        report.conversations += 1;
    }
    let detail = json!({"into": into, "facts": report.facts,
                            "conversations": report.conversations, "kept": report.kept});
    log(tx, CurationChange::Merged, from, detail, now)?;
    Ok(report)
}

impl Store {
    /// The curation log of a task (every change on its branches), or of `main` when `task_id`
    /// is `None`, in the order written.
    pub fn curation_events(&self, task_id: Option<&str>) -> Result<Vec<CurationEvent>> {
        if let Some(task) = task_id {
            validate::ident("task_id", task)?;
        }
        self.backend
            .docs(EVENT, &events_of(task_id), None, usize::MAX)?
            .iter()
            .map(|(_, doc)| parsed("curation event", doc))
            .collect()
    }
}

/// A report line for the item `id`.
fn item(
    kind: &str,
    id: &str,
    outcome: &Result<curation::Score>,
    verdict: Option<Verdict>,
) -> VerifiedItem {
    VerifiedItem {
        kind: kind.to_owned(),
        id: id.to_owned(),
        score: outcome.as_ref().ok().map(|s| s.score),
        verdict,
        error: outcome.as_ref().err().map(ToString::to_string),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn bad_curation_input_is_refused_whole_and_writes_nothing() {
        let store = Store::memory();
        let huge = Message {
            role: "assistant".into(),
            content: "x".repeat(store.limits().max_field_bytes + 1),
            ..Message::default()
        };
        let odd = Message {
            role: "narrator".into(),
            content: "once upon a time".into(),
            ..Message::default()
        };
        let err = store
            .add_conversation(NewConversation {
                branch: "task/t/a".into(),
                messages: vec![huge, odd],
                task_id: Some("no spaces allowed".into()),
                ..NewConversation::default()
            })
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            ["task_id", "messages[0].content", "messages[1].role"]
        );
        let facts = vec![NewFact {
            text: String::new(),
            confidence: Some(f64::NAN),
            source: None,
        }];
        let err = store.add_facts("task/t", facts).unwrap_err();
        assert_eq!(err.problems().len(), 2);
        let bad = Thresholds {
            fact_threshold: f64::NAN,
            ..Thresholds::default()
        };
        assert!(store.verify("task/t", None, &bad).is_err());
        assert!(store.merge("main", None).is_err(), "main has no parent");
        assert!(store.list_conversations(None, None).unwrap().is_empty());
        assert!(store.branches().unwrap().is_empty());
        assert!(store.curation_events(Some("t")).unwrap().is_empty());
    }

    #[test]
    fn keys_keep_a_branchs_facts_under_one_prefix() {
        let task = Branch::parse("task/t").unwrap();
        let agent = Branch::parse("task/t/a").unwrap();
        assert!(!fact_key(&agent, "f").starts_with(&facts_of(&task)));
        assert!(fact_key(&agent, "f").starts_with(&agents_facts_of(&task)));
        assert_eq!(fact_key(&Branch::main(), "f"), "1/main/f");
        assert_eq!(runs(&[1, 2, 3, 5, 7, 8]), [(1, 3), (5, 5), (7, 8)]);
        assert_eq!(number_key("c", 7), "c/0000000007");
    }
}
