//! Sessions (docs/design.md §7): who currently owns a conversation, and the hops it took, after any
//! restart. Every handoff created with a `session_id` is listed in its session's document, so
//! reading a session reads its own handoffs, never the store.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::chain::Hop;
use crate::error::{Error, Result};
use crate::record::{Handoff, Metadata, Status};
use crate::store::{Doc, Store, Tx, hop_of};
use crate::validate;

/// The kind of a session's document, keyed by the session id.
const SESSION: &str = "session";

/// A session's document: its handoffs, oldest first.
#[derive(Default, Serialize, Deserialize)]
struct Stored {
    handoffs: Vec<String>,
}

/// A conversation as the store knows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Session {
    /// The session.
    pub session_id: String,
    /// Who owns it now: the holder of its latest handoff once taken (claimed or completed),
    /// else that handoff's sender (the work has not moved yet, or came back); `None` before
    /// its first handoff.
    pub current_agent: Option<String>,
    /// Its handoffs as hops, oldest first.
    pub handoff_chain: Vec<Hop>,
    /// The session's shared context: the memory of scope `session:<id>` (empty when none).
    pub context: Metadata,
}

/// The session's stored document, read (an empty one when there is none).
fn stored(session: &str, doc: Option<&Doc>) -> Result<Stored> {
    match doc {
        Some(doc) => serde_json::from_str(&doc.body)
            .map_err(|e| Error::storage(format!("corrupt session document {session}: {e}"))),
        None => Ok(Stored::default()),
    }
}

/// Lists `record` in its session, if it has one (in the transaction that creates it).
pub(crate) fn note(tx: &mut dyn Tx, record: &Handoff) -> Result<()> {
    let Some(session) = &record.session_id else {
        return Ok(());
    };
    let current = tx.doc(SESSION, session)?;
    let mut stored = stored(session, current.as_ref())?;
    stored.handoffs.push(record.id.clone());
    let doc = Doc {
        version: current.as_ref().map_or(1, |doc| doc.version + 1),
        body: serde_json::to_string(&stored).map_err(|e| Error::storage(e.to_string()))?,
    };
    match current {
        Some(_) => tx.update_doc(SESSION, session, &doc),
        None => tx.insert_doc(SESSION, session, &doc),
    }
}

/// Takes `record` out of its session's list, if it has a session (when pruning removes it):
/// a session lists only records the store holds.
pub(crate) fn forget(tx: &mut dyn Tx, record: &Handoff) -> Result<()> {
    let Some(session) = &record.session_id else {
        return Ok(());
    };
    let Some(current) = tx.doc(SESSION, session)? else {
        return Ok(());
    };
    let mut stored = stored(session, Some(&current))?;
    let before = stored.handoffs.len();
    stored.handoffs.retain(|id| *id != record.id);
    if stored.handoffs.len() == before {
        return Ok(());
    }
    let doc = Doc {
        version: current.version + 1,
        body: serde_json::to_string(&stored).map_err(|e| Error::storage(e.to_string()))?,
    };
    tx.update_doc(SESSION, session, &doc)
}

impl Store {
    /// The session `session_id`: who owns the conversation now, its hops, and its context.
    pub fn session(&self, session_id: &str) -> Result<Session> {
        validate::ident("session_id", session_id)?;
        let stored = stored(session_id, self.backend.doc(SESSION, session_id)?.as_ref())?;
        let records: Vec<Handoff> = stored
            .handoffs
            .iter()
            .map(|id| self.get(id))
            .collect::<Result<_>>()?;
        let current_agent = records.last().and_then(|h| match h.status {
            Status::Claimed | Status::Completed => h.claimed_by.clone(),
            _ => h.from_agent.clone(),
        });
        // A session id near the id rule's length leaves no room for the scope's prefix: such
        // a session has no context.
        let scope = format!("session:{session_id}");
        let context = if validate::is_ident(&scope) {
            self.memory_get(&scope)?
                .map(|m| m.value)
                .unwrap_or_default()
        } else {
            Metadata::new()
        };
        Ok(Session {
            session_id: session_id.to_owned(),
            current_agent,
            handoff_chain: records.iter().map(hop_of).collect(),
            context,
        })
    }
}
