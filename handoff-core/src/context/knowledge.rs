//! The two indexes a successor's packet reads, kept as documents so that every backend has
//! them, written in the transaction of the change they follow:
//!
//! - the terms of the facts on `main` (`main_term`, keyed `<term key>/<newest first>/<fact
//!   id>`): a handoff's relevant knowledge is a few prefix reads, most recent first, however
//!   much `main` holds;
//! - the conversations of each task (`task_conversation`, keyed `<task>/<conversation id>`):
//!   a task's conversations without reading every conversation of the store.
//!
//! A store written before these indexes existed gets them on its first write of a fact on
//! `main` or of a task's conversation, or on its first packet: one pass over what it holds,
//! marked done by a document of its own. Two writers that both find the mark missing both
//! insert it, and the second conflicts and runs again, finding it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::context::relevance::{self, Posting};
use crate::curation::store::{CONVERSATION, FACT, fact_key, facts_of};
use crate::curation::{Branch, Conversation, Fact};
use crate::error::Result;
use crate::store::{Backend, body, parsed};
use crate::store::{Doc, Tx};

/// A posting: a term of a fact on `main`.
const TERM: &str = "main_term";
/// A conversation of a task.
const TASK_CONVERSATION: &str = "task_conversation";
/// The mark that the store's indexes are built.
const MARK: (&str, &str) = ("knowledge_index", "v1");
/// At most this many facts are read per query term, the most recent first: a term common
/// enough to hold more weighs next to nothing, and the cost of a packet stays bounded
/// whatever `main` holds.
const PER_TERM: usize = 32;
/// At most this many terms of the query are looked up.
pub(super) const QUERY_TERMS: usize = 24;

#[derive(Serialize, Deserialize)]
struct PostingBody {
    tf: u32,
    len: u32,
}

/// A key part that sorts the newest first.
fn newest_first(at: DateTime<Utc>) -> String {
    let micros = u64::try_from(at.timestamp_micros()).unwrap_or(0);
    format!("{:020}", u64::MAX - micros)
}

/// Builds the indexes of a store that has none yet; a store that has them is left as it is.
/// Called before the change it precedes is written, so that the pass does not see it.
fn ready(tx: &mut dyn Tx) -> Result<()> {
    if tx.peek_doc(MARK.0, MARK.1)?.is_some() {
        return Ok(());
    }
    tx.insert_doc(
        MARK.0,
        MARK.1,
        &Doc {
            version: 1,
            body: "{}".to_owned(),
        },
    )?;
    for (_, doc) in tx.docs(FACT, &facts_of(&Branch::main()))? {
        post(tx, &parsed::<Fact>("fact", &doc)?)?;
    }
    for (_, doc) in tx.docs(CONVERSATION, "")? {
        let conversation: Conversation = parsed("conversation", &doc)?;
        list(tx, &conversation)?;
    }
    Ok(())
}

/// Writes the postings of a fact on `main`.
fn post(tx: &mut dyn Tx, fact: &Fact) -> Result<()> {
    let (counts, len) = relevance::term_counts(&fact.text);
    let when = newest_first(fact.created_at);
    for (term, tf) in counts {
        let key = format!("{}/{when}/{}", relevance::term_key(&term), fact.id);
        let doc = Doc {
            version: 1,
            body: body(&PostingBody { tf, len })?,
        };
        tx.insert_doc(TERM, &key, &doc)?;
    }
    Ok(())
}

/// Lists a task's conversation under its task.
fn list(tx: &mut dyn Tx, conversation: &Conversation) -> Result<()> {
    if let Some(task) = &conversation.task_id {
        let doc = Doc {
            version: 1,
            body: "{}".to_owned(),
        };
        tx.insert_doc(
            TASK_CONVERSATION,
            &format!("{task}/{}", conversation.id),
            &doc,
        )?;
    }
    Ok(())
}

/// Stores a new fact, and its postings when it lies on `main`.
pub(crate) fn insert_fact(tx: &mut dyn Tx, fact: &Fact) -> Result<()> {
    let on_main = fact.branch == Branch::main();
    if on_main {
        ready(tx)?;
    }
    let doc = Doc {
        version: 1,
        body: body(fact)?,
    };
    tx.insert_doc(FACT, &fact_key(&fact.branch, &fact.id), &doc)?;
    if on_main {
        post(tx, fact)?;
    }
    Ok(())
}

/// Stores a new conversation, listed under its task when it has one.
pub(crate) fn insert_conversation(tx: &mut dyn Tx, conversation: &Conversation) -> Result<()> {
    if conversation.task_id.is_some() {
        ready(tx)?;
    }
    let doc = Doc {
        version: 1,
        body: body(conversation)?,
    };
    tx.insert_doc(CONVERSATION, &conversation.id, &doc)?;
    list(tx, conversation)
}

/// Whether the store's indexes are built; builds them when they are not and the store can be
/// written (a store opened read-only cannot: the readers below then scan).
pub(crate) fn built(backend: &dyn Backend) -> bool {
    if matches!(backend.doc(MARK.0, MARK.1), Ok(Some(_))) {
        return true;
    }
    backend.write(&mut |tx| ready(tx)).is_ok()
}

/// The facts on `main` most relevant to `query` (its terms, [`relevance::query_terms`]), the
/// best first, ties the most recent first: at most `limit` of those `keep` keeps.
pub(super) fn relevant_facts(
    backend: &dyn Backend,
    query: &[String],
    limit: usize,
    keep: impl Fn(&Fact) -> bool,
) -> Result<Vec<Fact>> {
    if query.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let mut postings: Vec<Vec<Posting>> = Vec::with_capacity(query.len());
    // The newest-first part of each fact's key, to break ties.
    let mut when: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    if built(backend) {
        for term in query {
            let prefix = format!("{}/", relevance::term_key(term));
            let mut found = Vec::new();
            for (key, doc) in backend.docs(TERM, &prefix, None, PER_TERM)? {
                let mut parts = key.rsplitn(3, '/');
                let (Some(id), Some(at)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let posting: PostingBody = parsed("fact term", &doc)?;
                when.insert(id.to_owned(), at.to_owned());
                found.push(Posting {
                    doc: id.to_owned(),
                    tf: posting.tf,
                    len: posting.len,
                });
            }
            postings.push(found);
        }
    } else {
        // No index (a read-only store written before it): every fact on `main` is read.
        let facts: Vec<Fact> = backend
            .docs(FACT, &facts_of(&Branch::main()), None, usize::MAX)?
            .iter()
            .map(|(_, doc)| parsed("fact", doc))
            .collect::<Result<_>>()?;
        postings = vec![Vec::new(); query.len()];
        for fact in &facts {
            let (counts, len) = relevance::term_counts(&fact.text);
            for (term, tf) in counts {
                if let Some(i) = query.iter().position(|q| *q == term) {
                    postings[i].push(Posting {
                        doc: fact.id.clone(),
                        tf,
                        len,
                    });
                }
            }
            when.insert(fact.id.clone(), newest_first(fact.created_at));
        }
    }
    let mut ranked: Vec<(String, f64)> = relevance::bm25(&postings).into_iter().collect();
    ranked.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| when.get(&a.0).cmp(&when.get(&b.0)))
            .then_with(|| a.0.cmp(&b.0))
    });
    let mut found = Vec::new();
    for (id, _) in ranked {
        if found.len() == limit {
            break;
        }
        let Some(doc) = backend.doc(FACT, &fact_key(&Branch::main(), &id))? else {
            continue;
        };
        let fact: Fact = parsed("fact", &doc)?;
        if keep(&fact) {
            found.push(fact);
        }
    }
    Ok(found)
}

/// The conversations of a task, in no particular order ([`Store::list_conversations`] orders
/// them).
///
/// [`Store::list_conversations`]: crate::store::Store::list_conversations
pub(crate) fn task_conversations(backend: &dyn Backend, task: &str) -> Result<Vec<Conversation>> {
    let mut found: Vec<Conversation> = Vec::new();
    if built(backend) {
        for (key, _) in backend.docs(TASK_CONVERSATION, &format!("{task}/"), None, usize::MAX)? {
            let Some(id) = key.strip_prefix(&format!("{task}/")) else {
                continue;
            };
            if let Some(doc) = backend.doc(CONVERSATION, id)? {
                found.push(parsed("conversation", &doc)?);
            }
        }
    } else {
        for (_, doc) in backend.docs(CONVERSATION, "", None, usize::MAX)? {
            let conversation: Conversation = parsed("conversation", &doc)?;
            if conversation.task_id.as_deref() == Some(task) {
                found.push(conversation);
            }
        }
    }
    Ok(found)
}
