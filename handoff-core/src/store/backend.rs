//! The storage contract every backend implements.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::chain::Hop;
use crate::error::Result;
use crate::machine::{Event, NewEvent};
use crate::record::{Handoff, Kind, Status};

/// Which records [`Backend::list`] returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only records in this status.
    pub status: Option<Status>,
    /// Only records of this task.
    pub task_id: Option<String>,
    /// Only records addressed to this agent.
    pub to_agent: Option<String>,
    /// Only records of this kind.
    pub kind: Option<Kind>,
    /// At most this many records.
    pub limit: Option<usize>,
}

/// A storage backend: atomic writes of records with their events, and indexed reads.
///
/// The state machine lives in the core; a backend only stores what it is given.
///
/// # Contract
///
/// - [`Backend::write`] runs its closure inside one atomic write transaction. Every
///   [`Tx`] call made by the closure takes effect together when the closure returns `Ok`, and
///   none does when it returns `Err` (the error is passed back unchanged). Writes from other
///   threads or processes sharing the store are serialised: a transaction sees no concurrent
///   change between its reads and its writes.
/// - A backend retries transient contention (a lock held by another process) itself and
///   never reports it to the caller; it reports [`Error::Storage`](crate::Error::Storage) only
///   for real failures.
/// - "Not found" is `Ok(None)` (or an empty list), never an error.
/// - Records come back exactly as written ([`Tx::update`] changes only the lifecycle fields
///   from `status` on; the content is written once, by [`Tx::insert`]).
/// - Lists are ordered by insertion: records oldest first, events by `seq`.
/// - Events get `seq` numbers that increase strictly in commit order across the whole store.
pub trait Backend: Send + Sync + fmt::Debug {
    /// Runs `work` in one atomic write transaction (see the contract).
    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// The record with this id.
    fn get(&self, id: &str) -> Result<Option<Handoff>>;

    /// Records matching `filter`, oldest first.
    fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>>;

    /// The event log of one handoff, or of the whole store, by `seq`.
    fn events(&self, handoff_id: Option<&str>) -> Result<Vec<Event>>;

    /// The hops of a task, oldest first, checkpoints included.
    fn hops(&self, task_id: &str) -> Result<Vec<Hop>>;
}

/// The operations available inside one write transaction.
pub trait Tx {
    /// The record with this id, as the transaction sees it.
    fn get(&mut self, id: &str) -> Result<Option<Handoff>>;

    /// Stores a new record. The caller has checked that the id is free.
    fn insert(&mut self, record: &Handoff) -> Result<()>;

    /// Stores a record's new lifecycle fields (`status` and after).
    fn update(&mut self, record: &Handoff) -> Result<()>;

    /// Appends an event to the log.
    fn append(&mut self, event: NewEvent) -> Result<()>;

    /// The hops of a task, oldest first, checkpoints included.
    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>>;

    /// The oldest pending record that `agent` may claim at `now`: addressed to it or to nobody,
    /// not a checkpoint, not past `expires_at`, optionally only of `task_id`, and inserted after
    /// the record `after` when one is given (the store skips what its policy refuses).
    fn next_claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
    ) -> Result<Option<Handoff>>;

    /// Up to `limit` records with a time-driven change due at `now`: claimed with
    /// `lease_until <= now`, or pending with `expires_at <= now`.
    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>>;
}

/// The light part of a record that chains are made of.
pub(crate) fn hop_of(h: &Handoff) -> Hop {
    Hop {
        handoff_id: h.id.clone(),
        parent_id: h.parent_id.clone(),
        from_agent: h.from_agent.clone(),
        to_agent: h.successor().map(str::to_owned),
        kind: h.kind,
        status: h.status,
        created_at: h.created_at,
    }
}
