//! Memory (docs/design.md §7): versioned JSON documents by scope — an agent's memory
//! (`agent:writer`), a session's state (`session:s1`), the context a swarm shares (`shared`) —
//! with optimistic concurrency: a write names the version it read, and `memory_update` reads,
//! applies the caller's function and writes, again when another writer came first. The
//! function runs outside any transaction, so a slow one (a model call) holds no lock.
//!
//! The folder: this file is memory; `sessions` keeps who owns each conversation. Both are
//! documents of the [`Store`](crate::Store), so every backend has them; `ops` holds their
//! operations.

pub(crate) mod ops;
pub(crate) mod sessions;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::record::Metadata;
use crate::store::{Doc, Store, Tx};
use crate::validate::{self, Collector};

/// The kind of a memory document, keyed by its scope.
const MEMORY: &str = "memory";

/// How often `memory_update` reads and writes again after other writers came first before it
/// gives up with `Busy` (the faces that run the loop themselves, for an async function, use it
/// too).
pub const MAX_MEMORY_UPDATE_ROUNDS: usize = 10_000;

/// One scope's memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Memory {
    /// The scope (`agent:writer`, `session:s1`, `shared`, ...).
    pub scope: String,
    /// The document.
    pub value: Metadata,
    /// Grows by one with every write, from 1.
    pub version: u64,
    /// When it was last written.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: DateTime<Utc>,
}

/// A memory document as stored. A deleted scope keeps its document, marked, so that its
/// version never goes back: a writer that read the scope before the delete conflicts with
/// one written after it.
#[derive(Serialize, Deserialize)]
struct Stored {
    value: Metadata,
    #[serde(with = "crate::clock::rfc3339")]
    updated_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
}

/// The scope's memory, `None` when it was deleted.
fn memory_of(scope: &str, doc: &Doc) -> Result<Option<Memory>> {
    let stored: Stored = serde_json::from_str(&doc.body)
        .map_err(|e| Error::storage(format!("corrupt memory document {scope}: {e}")))?;
    Ok((!stored.deleted).then(|| Memory {
        scope: scope.to_owned(),
        value: stored.value,
        version: doc.version,
        updated_at: stored.updated_at,
    }))
}

/// The body of a memory document.
fn stored_body(value: Metadata, updated_at: DateTime<Utc>, deleted: bool) -> Result<String> {
    serde_json::to_string(&Stored {
        value,
        updated_at,
        deleted,
    })
    .map_err(|e| Error::storage(e.to_string()))
}

/// The scope's stored document, locked for the transaction, and the version callers see (0
/// when there is none or it was deleted); [`Error::VersionConflict`] unless that version is
/// `expected`, when one is given.
fn locked_at(tx: &mut dyn Tx, scope: &str, expected: Option<u64>) -> Result<(Option<Doc>, u64)> {
    let current = tx.doc(MEMORY, scope)?;
    let actual = match &current {
        Some(doc) => memory_of(scope, doc)?.map_or(0, |m| m.version),
        None => 0,
    };
    match expected {
        Some(expected) if expected != actual => Err(Error::VersionConflict {
            id: scope.to_owned(),
            expected,
            actual,
        }),
        _ => Ok((current, actual)),
    }
}

impl Store {
    /// The memory of `scope`, or `None` when nothing was written there.
    pub fn memory_get(&self, scope: &str) -> Result<Option<Memory>> {
        validate::ident("scope", scope)?;
        match self.backend.doc(MEMORY, scope)? {
            Some(doc) => memory_of(scope, &doc),
            None => Ok(None),
        }
    }

    /// Writes the memory of `scope`. With `expected_version` (0: nothing written yet), the
    /// write happens only if the scope is still at that version, and otherwise fails with
    /// [`Error::VersionConflict`] naming both versions.
    pub fn memory_put(
        &self,
        scope: &str,
        value: Metadata,
        expected_version: Option<u64>,
    ) -> Result<Memory> {
        let mut c = Collector::default();
        c.ident("scope", scope);
        c.json("value", &value.values().collect::<Vec<_>>(), &self.limits);
        c.finish()?;
        let now = self.clock.now();
        let body = stored_body(value.clone(), now, false)?;
        let mut version = 0;
        self.backend.write(&mut |tx| {
            let (current, _) = locked_at(tx, scope, expected_version)?;
            // After a delete, the count goes on from the deleted document's.
            version = current.as_ref().map_or(0, |doc| doc.version) + 1;
            let doc = Doc {
                version,
                body: body.clone(),
            };
            match current {
                Some(_) => tx.update_doc(MEMORY, scope, &doc),
                None => tx.insert_doc(MEMORY, scope, &doc),
            }
        })?;
        Ok(Memory {
            scope: scope.to_owned(),
            value,
            version,
            updated_at: now,
        })
    }

    /// Reads the memory of `scope` (empty when nothing was written), applies `change` and
    /// writes the result if nobody wrote meanwhile; otherwise reads and applies again. When
    /// `change` fails, nothing is written and its error is returned as it is.
    pub fn memory_update<E: From<Error>>(
        &self,
        scope: &str,
        mut change: impl FnMut(Metadata) -> std::result::Result<Metadata, E>,
    ) -> std::result::Result<Memory, E> {
        for _ in 0..MAX_MEMORY_UPDATE_ROUNDS {
            let current = self.memory_get(scope)?;
            let (value, version) = current.map_or((Metadata::new(), 0), |m| (m.value, m.version));
            let changed = change(value)?;
            match self.memory_put(scope, changed, Some(version)) {
                Err(Error::VersionConflict { .. }) => continue,
                other => return other.map_err(E::from),
            }
        }
        Err(E::from(Error::Busy {
            message: format!(
                "memory {scope} changed under every one of {MAX_MEMORY_UPDATE_ROUNDS} updates"
            ),
        }))
    }

    /// Every scope's memory whose scope starts with `prefix` (all without one), in scope
    /// order.
    pub fn memory_list(&self, prefix: Option<&str>) -> Result<Vec<Memory>> {
        let mut found = Vec::new();
        for (scope, doc) in self
            .backend
            .docs(MEMORY, prefix.unwrap_or(""), None, usize::MAX)?
        {
            found.extend(memory_of(&scope, &doc)?);
        }
        Ok(found)
    }

    /// Forgets the memory of `scope`; with `expected_version`, only if it is still at it
    /// ([`Error::VersionConflict`] otherwise). Whether there was anything to forget.
    pub fn memory_delete(&self, scope: &str, expected_version: Option<u64>) -> Result<bool> {
        validate::ident("scope", scope)?;
        let now = self.clock.now();
        let mut found = false;
        self.backend.write(&mut |tx| {
            let (current, actual) = locked_at(tx, scope, expected_version)?;
            found = actual > 0;
            if let (true, Some(doc)) = (found, &current) {
                let tombstone = Doc {
                    version: doc.version + 1,
                    body: stored_body(Metadata::new(), now, true)?,
                };
                tx.update_doc(MEMORY, scope, &tombstone)?;
            }
            Ok(())
        })?;
        Ok(found)
    }
}
