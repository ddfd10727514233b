//! The storage contract every backend implements.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Only records inserted after the record with this id: a cursor, the id of the last
    /// record of the previous page (an unknown id gives nothing).
    pub after: Option<String>,
}

impl ListFilter {
    /// The SQL query that lists the matching records of the `handoffs` table with the columns
    /// `columns`, in insertion order, and its text arguments: what the SQL backends share.
    /// `param(n)` spells the n-th parameter (from 1) in the backend's dialect, typed as text.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn sql(&self, columns: &str, param: fn(usize) -> String) -> (String, Vec<String>) {
        let mut sql = format!("SELECT {columns} FROM handoffs WHERE 1 = 1");
        let mut args: Vec<String> = Vec::new();
        for (column, value) in [
            ("status", self.status.map(|s| s.as_str().to_owned())),
            ("task_id", self.task_id.clone()),
            ("to_agent", self.to_agent.clone()),
            ("kind", self.kind.map(|k| k.as_str().to_owned())),
        ] {
            if let Some(value) = value {
                args.push(value);
                sql.push_str(&format!(" AND {column} = {}", param(args.len())));
            }
        }
        if let Some(after) = &self.after {
            args.push(after.clone());
            // An unknown id gives nothing: the comparison with NULL is never true.
            sql.push_str(&format!(
                " AND pos > (SELECT pos FROM handoffs WHERE id = {})",
                param(args.len())
            ));
        }
        sql.push_str(" ORDER BY pos");
        if let Some(limit) = self.limit {
            sql.push_str(&format!(
                " LIMIT {}",
                i64::try_from(limit).unwrap_or(i64::MAX)
            ));
        }
        (sql, args)
    }
}

/// How many records are in one status for one addressee ([`Backend::queue_counts`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct QueueCount {
    /// The status.
    pub status: crate::Status,
    /// The agent the records are addressed to (`None`: any agent may claim them).
    pub to_agent: Option<String>,
    /// How many.
    pub count: u64,
}

impl QueueCount {
    /// Counts keyed by (status text, addressee), as a backend tallies them.
    pub(crate) fn from_tally<S: AsRef<str>>(
        tally: impl IntoIterator<Item = ((S, Option<String>), u64)>,
    ) -> Vec<QueueCount> {
        let mut counts: Vec<QueueCount> = tally
            .into_iter()
            .filter_map(|((status, to_agent), count)| {
                Some(QueueCount {
                    status: status.as_ref().parse().ok()?,
                    to_agent,
                    count,
                })
            })
            .collect();
        counts.sort_by(|a, b| {
            (a.status.as_str(), &a.to_agent).cmp(&(b.status.as_str(), &b.to_agent))
        });
        counts
    }
}

/// Which events [`Backend::events`] returns: a page of the log, oldest first.
///
/// `after` is a cursor: the `seq` of the last event of the previous page, so a reader follows
/// the whole log with bounded memory however long it grows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only this handoff's events.
    pub handoff_id: Option<String>,
    /// Only the events of this task's handoffs.
    pub task_id: Option<String>,
    /// Only events with a larger `seq`.
    pub after: Option<u64>,
    /// At most this many events.
    pub limit: Option<usize>,
}

impl EventFilter {
    /// Whether `event`, of a handoff of `task`, passes the filter (the page limit aside).
    pub(crate) fn matches(&self, event: &Event, task: impl FnOnce() -> Option<String>) -> bool {
        self.after.is_none_or(|after| event.seq > after)
            && self
                .handoff_id
                .as_ref()
                .is_none_or(|id| *id == event.handoff_id)
            && self
                .task_id
                .as_ref()
                .is_none_or(|wanted| task().as_ref() == Some(wanted))
    }
}

/// What a backend can do beyond the contract every backend keeps, so that a caller can ask
/// before relying on it (`store.capabilities()` in every face).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Capabilities {
    /// The store outlives the process that opened it.
    pub durable: bool,
    /// Several processes on one machine may share the store.
    pub shared_by_processes: bool,
    /// Processes on several machines may share the store.
    pub shared_by_machines: bool,
    /// [`Store::backup`](crate::Store::backup) writes a consistent, portable copy while the
    /// store stays in use (every backend does).
    pub backup: bool,
    /// A worker waiting for work is woken when it arrives, instead of looking again at short
    /// intervals ([`Backend::subscribe`]).
    pub wakes_waiters: bool,
}

/// A storage backend: atomic writes of records with their events, and indexed reads.
///
/// The state machine lives in the core; a backend only stores what it is given.
///
/// # Contract
///
/// The contract is written so that a database that locks rows (PostgreSQL) can keep it as well
/// as one that locks the whole store (SQLite, a folder of files).
///
/// - [`Backend::write`] runs its closure inside one atomic write transaction. Every
///   [`Tx`] call made by the closure takes effect together when the closure returns `Ok`, and
///   none does when it returns `Err` (the error is passed back unchanged).
/// - **The closure may run more than once.** A backend that detects a conflict only at commit
///   (a serialisation failure, a deadlock, a unique key another writer took first) rolls back
///   and runs the closure again on fresh reads; the closure has no effect outside its `Tx`.
///   The caller sees the outcome of the run that committed.
/// - **What must be exclusive is locked by the reads that need it**, so a backend that does
///   not lock the whole store locks these explicitly:
///   - [`Tx::get`] locks the record it returns until the transaction ends (`FOR UPDATE`): the
///     decision made on it (claim, complete, ...) cannot race another writer's;
///   - [`Tx::hops`] locks the task's path, so two handoffs of one task are checked against the
///     chain policy one after the other, never side by side;
///   - [`Tx::get`] of an id that is free, followed by [`Tx::insert`], must not let two
///     transactions both insert it (an idempotent create): the later one conflicts and runs
///     again, and then finds the record;
///   - [`Tx::next_claimable`] returns a record no other open transaction holds, and locks it
///     (`FOR UPDATE SKIP LOCKED`), so claimers do not queue behind one another.
/// - A backend retries transient contention (a lock held by another process) itself and
///   never reports it to the caller; it reports [`Error::Busy`](crate::Error::Busy) when
///   contention outlasts the store's patience and [`Error::Storage`](crate::Error::Storage)
///   for real failures (a lost connection is reported, and the next call reconnects).
/// - "Not found" is `Ok(None)` (or an empty list), never an error.
/// - Records come back exactly as written ([`Tx::update`] changes only the lifecycle fields
///   from `status` on; the content is written once, by [`Tx::insert`]).
/// - Lists are ordered by insertion: records oldest first, events by `seq`.
/// - Events get `seq` numbers that increase along every record's history and every task's
///   path (a change made after another commits gets the larger number), so the order of one
///   handoff's events and of one task's events is the order their changes were made in. Writes
///   that touch neither the same record nor the same path may be numbered in either order.
/// - [`Backend::events`] never returns an event while one with a smaller `seq` may still
///   commit, so [`EventFilter::after`] is a cursor that reads the whole log incrementally
///   without missing an event committed late. (A backend that serialises its writers gets this
///   for free; PostgreSQL's readers wait out the writers in flight, see its module doc.)
/// - What a backend lacks it says in [`Backend::capabilities`].
pub trait Backend: Send + Sync + fmt::Debug {
    /// What this backend can do beyond the contract.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// The backend's name in traces and logs (`sqlite`, `postgres`, `files`, `memory`).
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Runs `work` in one atomic write transaction (see the contract).
    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// The record with this id.
    fn get(&self, id: &str) -> Result<Option<Handoff>>;

    /// Records matching `filter`, oldest first.
    fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>>;

    /// The events matching `filter`, by `seq`.
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>>;

    /// Hands `sink` everything the store holds, from one consistent snapshot taken while the
    /// store stays in use, in this order: the settings (by key), the records in insertion
    /// order (each with the digest of its current claim's secret), the events by `seq`, the
    /// documents by kind then key. What [`Store::backup`](crate::Store::backup) writes: a
    /// backend streams it (a page at a time at most), so a backup never holds the store.
    ///
    /// `sink` is called once per piece and never again after it fails (its error is returned
    /// unchanged); a backend must not hand a piece twice, so it does not retry once it has
    /// handed one out.
    fn export(&self, sink: &mut dyn FnMut(Exported) -> Result<()>) -> Result<()>;

    /// Looks for damage ([`Store::check`](crate::Store::check)). The default reads every
    /// record and event through this trait and reports what cannot be read; it repairs
    /// nothing.
    fn check(&self, repair: bool) -> Result<crate::store::CheckReport> {
        let _ = repair;
        let mut report = crate::store::CheckReport::default();
        crate::store::check::read_everything(self, &mut report);
        Ok(report)
    }

    /// Statistics per from→to pair. The default reads every record and event; a backend with
    /// a query language computes them there, without loading records.
    fn path_stats(&self) -> Result<Vec<crate::stats::PathStats>> {
        let mut tally = crate::stats::Tally::default();
        let records = self.list(&ListFilter::default())?;
        let mut first_claims = std::collections::HashMap::new();
        for event in self.events(&EventFilter::default())? {
            if matches!(event.change, crate::machine::Change::Claimed { .. }) {
                first_claims.entry(event.handoff_id).or_insert(event.at);
            }
        }
        for h in records.iter().filter(|h| h.kind != Kind::Checkpoint) {
            tally.add(crate::stats::Row {
                from_agent: h.from_agent.as_deref(),
                to_agent: h.successor(),
                status: h.status,
                created_at: h.created_at,
                completed_at: h.completed_at,
                first_claim: first_claims.get(&h.id).copied(),
            });
        }
        Ok(tally.finish())
    }

    /// How many records are in each status, per addressee (checkpoints left out), in status
    /// then agent order. The default reads every record; a backend with a query language
    /// counts them there.
    fn queue_counts(&self) -> Result<Vec<QueueCount>> {
        let mut counts = std::collections::BTreeMap::new();
        for h in self.list(&ListFilter::default())? {
            if h.kind != Kind::Checkpoint {
                *counts
                    .entry((h.status.as_str(), h.to_agent))
                    .or_insert(0u64) += 1;
            }
        }
        Ok(QueueCount::from_tally(counts))
    }

    /// The store at a glance ([`Store::metrics`](crate::Store::metrics)). The default reads
    /// every record, event and step through this trait; a backend with a query language
    /// aggregates there, without loading records.
    fn metrics(&self) -> Result<crate::metrics::Metrics> {
        crate::metrics::store::through_trait(self)
    }

    /// Whether the backend answers and its schema is current ([`Store::ready`]). The default
    /// reads a setting; a backend with a schema version compares it with its build's.
    ///
    /// [`Store::ready`]: crate::Store::ready
    fn ready(&self) -> Result<()> {
        self.setting("policy").map(drop)
    }

    /// The hops of a task, oldest first, checkpoints included.
    fn hops(&self, task_id: &str) -> Result<Vec<Hop>>;

    /// A store-wide setting (such as the saved chain policy), as written.
    fn setting(&self, key: &str) -> Result<Option<String>>;

    /// The document `key` of `kind`, as last committed.
    fn doc(&self, kind: &str, key: &str) -> Result<Option<Doc>>;

    /// Up to `limit` documents of `kind` whose keys start with `prefix` and come after
    /// `after` (a cursor: the last key of the previous page), in key order.
    fn docs(
        &self,
        kind: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Doc)>>;

    /// A signal that wakes a worker waiting for work ([`Store::claim_next_wait`]): subscribed
    /// before the first look, so that work created in between is not missed. The default
    /// sleeps a short while; a backend that can be told (PostgreSQL's NOTIFY) wakes at once,
    /// and one that can tell cheaply that something was committed watches for that.
    ///
    /// [`Store::claim_next_wait`]: crate::Store::claim_next_wait
    fn subscribe(&self) -> Result<Box<dyn WorkSignal + '_>> {
        Ok(Box::new(Poll))
    }
}

/// Why a store whose schema is at `found` is not ready for this build, which writes `writes`
/// ([`Backend::ready`] of a backend with a schema version).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn schema_moved(found: impl fmt::Display, writes: impl fmt::Display) -> crate::Error {
    crate::Error::storage(format!(
        "the store's schema is at version {found}, this build writes {writes}: restart with the \
         build that matches it"
    ))
}

/// Wakes a worker when work may have arrived.
pub trait WorkSignal {
    /// Returns when work may have arrived, or after `timeout` at the latest. Spurious wake-ups
    /// are allowed: the caller looks again.
    fn wait(&mut self, timeout: Duration) -> Result<()>;
}

/// How often a polling signal lets its worker look again.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The signal of backends that cannot be told: a short sleep.
pub(crate) struct Poll;

impl WorkSignal for Poll {
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        std::thread::sleep(timeout.min(POLL_INTERVAL));
        Ok(())
    }
}

/// How often a [`Watch`] reads its fingerprint.
const WATCH_INTERVAL: Duration = Duration::from_millis(10);

/// The least time between two wake-ups of a [`Watch`]: in a busy store the fingerprint
/// changes with every commit, and each wake-up costs the worker a write transaction.
const WATCH_GAP: Duration = Duration::from_millis(25);

/// A signal for backends that can tell cheaply that something was committed (SQLite's
/// `data_version`, the files store's index): it reads a fingerprint often and wakes the worker
/// when it changes, so an idle worker costs reads, never a write transaction.
pub(crate) struct Watch<F, T> {
    fingerprint: F,
    seen: T,
    woken: std::time::Instant,
}

impl<F: FnMut() -> Result<T>, T: PartialEq> Watch<F, T> {
    /// Starts from the fingerprint as it is now: a later commit wakes the worker.
    pub(crate) fn new(mut fingerprint: F) -> Result<Watch<F, T>> {
        let seen = fingerprint()?;
        Ok(Watch {
            fingerprint,
            seen,
            woken: std::time::Instant::now(),
        })
    }
}

impl<F: FnMut() -> Result<T>, T: PartialEq> WorkSignal for Watch<F, T> {
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        let start = std::time::Instant::now();
        let deadline = start + timeout;
        // Not sooner than the gap after the last wake-up (a worker just looked).
        let earliest = self.woken + WATCH_GAP;
        loop {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            if now >= earliest {
                let current = (self.fingerprint)()?;
                if current != self.seen {
                    self.seen = current;
                    break;
                }
            }
            std::thread::sleep(WATCH_INTERVAL.min(deadline - now));
        }
        self.woken = std::time::Instant::now();
        Ok(())
    }
}

/// One piece of a store, as [`Backend::export`] hands it out: everything a store holds is one
/// of these, so a store made of them again (in the same order) behaves as the first did.
#[derive(Clone, Debug, PartialEq)]
pub enum Exported {
    /// A store-wide setting.
    Setting {
        /// Its key.
        key: String,
        /// Its value, as written.
        value: String,
    },
    /// A record, with the digest of its current claim's secret (kept so that the holder of a
    /// claim can still settle it after a restore).
    Record {
        /// The record (boxed: a record is far larger than the other pieces).
        record: Box<Handoff>,
        /// SHA-256 of the current claim's secret, when it is claimed.
        claim_secret: Option<[u8; 32]>,
    },
    /// An event of the log.
    Event(Event),
    /// A document.
    Doc {
        /// Its kind.
        kind: String,
        /// Its key.
        key: String,
        /// The document.
        doc: Doc,
    },
}

/// A versioned JSON document the core keeps beside the records (a task, one of its steps, an
/// agent's memory): the backend stores the body as given, under a kind and a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doc {
    /// Grows by one with every change the core makes (its compare-and-swap token).
    pub version: u64,
    /// The document, as JSON text.
    pub body: String,
}

/// The JSON text of a document's body.
pub(crate) fn body<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| crate::Error::storage(e.to_string()))
}

/// A document's body read as `T`: one that does not read is corrupt (the core wrote it), a
/// storage error naming `what`.
pub(crate) fn parsed<T: serde::de::DeserializeOwned>(what: &str, doc: &Doc) -> Result<T> {
    serde_json::from_str(&doc.body)
        .map_err(|e| crate::Error::storage(format!("corrupt {what} document: {e}")))
}

/// The key of the `n`-th of a series of numbered documents under `prefix` (a conversation's
/// messages): `<prefix>/<n, ten digits>`, so that key order is number order.
pub(crate) fn number_key(prefix: &str, n: u64) -> String {
    format!("{prefix}/{n:010}")
}

/// The number a numbered document's key ends with.
pub(crate) fn numbered(key: &str) -> Result<u64> {
    key.rsplit('/')
        .next()
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| crate::Error::storage(format!("corrupt numbered key {key}")))
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

    /// Removes the record `id` with its events (those appended in this transaction too) and
    /// its claim secret; nothing when there is none. What pruning does to a finished task's
    /// handoffs: the caller mends the documents that name the record. Where a backend numbers
    /// events after the largest `seq` left (SQLite), removing the log's latest events lets the
    /// next ones take their numbers again.
    fn delete_record(&mut self, id: &str) -> Result<()>;

    /// Writes a store-wide setting.
    fn set_setting(&mut self, key: &str, value: &str) -> Result<()>;

    /// The digest of the current claim's secret of the record `id` (`None` when unclaimed or
    /// when it was claimed before secrets existed). Never part of a record, an event or a list.
    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>>;

    /// Stores (or, with `None`, forgets) the digest of the record's current claim secret.
    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()>;

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

    /// The document `key` of `kind` as the transaction sees it, locked until it ends (like
    /// [`Tx::get`]).
    fn doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>>;

    /// The document `key` of `kind` as last committed, without locking it: a look ahead,
    /// whose result the caller checks again under a lock. A backend whose transactions
    /// exclude each other reads it as [`Tx::doc`] does; one that locks rows reads it plainly.
    fn peek_doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.doc(kind, key)
    }

    /// The documents at `places` (`(kind, key)` each), in that order, each `None` where there
    /// is none, locked as [`Tx::doc`] locks one: what a task's step reads with its dependents.
    /// A backend that can read them in one go says so here.
    fn docs_at(&mut self, places: &[(&str, &str)]) -> Result<Vec<Option<Doc>>> {
        places
            .iter()
            .map(|(kind, key)| self.doc(kind, key))
            .collect()
    }

    /// Stores a new document. The caller has checked that the key is free; a backend that
    /// finds it taken by a concurrent transaction conflicts (and the closure runs again).
    fn insert_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()>;

    /// Replaces a document the transaction has read.
    fn update_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()>;

    /// Removes a document the transaction has read.
    fn delete_doc(&mut self, kind: &str, key: &str) -> Result<()>;

    /// The documents of `kind` whose keys start with `prefix`, in key order, as the
    /// transaction sees them (its own writes included).
    fn docs(&mut self, kind: &str, prefix: &str) -> Result<Vec<(String, Doc)>>;

    /// The keys [`Tx::docs`] would return, without the documents: what an import checks
    /// before writing many documents. A backend that can read keys alone says so here.
    fn doc_keys(&mut self, kind: &str, prefix: &str) -> Result<Vec<String>> {
        Ok(self
            .docs(kind, prefix)?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    }

    /// Copies numbered documents as they are: those of `kind` keyed `<from>/<n>` (`n` ten
    /// digits) for `n` in `first..=last` to `<to>/<n - first + start>`; returns how many. What a
    /// cherry-pick does with a conversation's messages; a backend that can copy inside the
    /// database says so here.
    fn copy_numbered_docs(
        &mut self,
        kind: &str,
        from: &str,
        (first, last): (u64, u64),
        to: &str,
        start: u64,
    ) -> Result<u64> {
        let mut copied = 0;
        for (key, doc) in self.docs(kind, &format!("{from}/"))? {
            let n = numbered(&key)?;
            if (first..=last).contains(&n) {
                self.insert_doc(kind, &number_key(to, n - first + start), &doc)?;
                copied += 1;
            }
        }
        Ok(copied)
    }

    /// What a `claim_next` reads first: [`Tx::lapsed`] (up to `limit`) and, when none is due,
    /// [`Tx::next_claimable`] with no `after`. A backend that pays a round trip per statement
    /// answers both in one. With `lock_open_path`, an open candidate's task path is also locked
    /// as [`Tx::hops`] would lock it, because the caller will read it for the chain policy.
    ///
    /// When records are due, the candidate is `None` (it could be older than one of them): the
    /// caller settles them and asks [`Tx::next_claimable`].
    fn lapsed_or_next(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        limit: usize,
        lock_open_path: bool,
    ) -> Result<(Vec<Handoff>, Option<Handoff>)> {
        // Locking the path is an optimisation of `hops`, which locks it anyway.
        let _ = lock_open_path;
        let due = self.lapsed(now, limit)?;
        if !due.is_empty() {
            return Ok((due, None));
        }
        Ok((due, self.next_claimable(agent, task_id, now, None)?))
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::cell::Cell;
    use std::time::Duration;

    use super::{Watch, WorkSignal};

    #[test]
    fn a_watch_wakes_when_its_fingerprint_changes_and_otherwise_at_the_timeout() {
        let reads = Cell::new(0u32);
        // The fingerprint changes on its fifth read.
        let mut watch = Watch::new(|| {
            reads.set(reads.get() + 1);
            Ok(reads.get() >= 5)
        })
        .unwrap();
        watch.wait(Duration::from_secs(30)).unwrap();
        assert!(watch.seen, "woken by the change, not by the timeout");
        let before = reads.get();
        watch.wait(Duration::from_millis(60)).unwrap();
        assert!(
            watch.seen && reads.get() > before,
            "looked again, found no change"
        );
    }
}
