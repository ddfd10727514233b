//! The [`Store`]: the state machine on top of a storage [`Backend`].
//!
//! This folder is the store's heart: opening and connecting ([`ConnectOptions`], [`Location`]),
//! the handoff lifecycle every feature builds on (create, claim, settle, the log), the
//! [`Backend`]/[`Tx`] contract, the backends (`memory`, `sqlite`, `files`, `postgres`), `check`
//! and the conformance suite. Each feature's own part of the `Store` lives in its folder
//! (`task/store.rs`, `curation/store.rs`, ...) and its types keep their paths here.

use std::collections::BTreeMap;
#[cfg(feature = "sqlite")]
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::{ContextV7, Timestamp, Uuid};

use crate::chain::{Chain, ChainPolicy, Hop, NewHop};
use crate::clock::{Clock, SystemClock, lease_delta};
use crate::error::{Error, Problem, Result};
use crate::machine::{Change, Command, Event, NewEvent, Transition, transition};
use crate::record::{Handoff, Kind, NewHandoff, Status};
use crate::validate::{self, Limits};

mod backend;
pub(crate) mod check;
pub mod files;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod turnstile;
mod url;
mod waiting;

#[cfg(any(test, feature = "testing"))]
pub mod conformance;

pub use backend::{
    Backend, Capabilities, Doc, EventFilter, Exported, ListFilter, QueueCount, Tx, WorkSignal,
};
pub(crate) use backend::{body, hop_of, number_key, numbered, parsed};
pub use check::{CheckReport, Damage};
pub use url::{Location, display_url, hide_url_passwords, url_password};

// Each feature's part of the `Store` lives in the feature's folder; its types keep the paths
// they had here.
pub use crate::bundle::keys::TrustedKey;
pub(crate) use crate::bundle::store::NO_SOURCE;
pub use crate::bundle::store::{Bundle, BundleStatus, ImportReport, NewBundle};
pub use crate::context::successor::{ContextOptions, DEFAULT_BUDGET_CHARS, DEFAULT_BUDGET_TOKENS};
pub(crate) use crate::curation::store::check_messages;
pub use crate::curation::store::{MAX_MESSAGES_PER_CALL, NewConversation};
pub use crate::handoff::claim::{Claim, ClaimRef, ClaimSecret};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use crate::handoff::claim::{ReadSecret, stored_digest};
pub(crate) use crate::handoff::claim::{hex, unhex};
pub use crate::handoff::lease::{DROPPED, Lease};
pub use crate::memory::sessions::Session;
pub use crate::memory::{MAX_MEMORY_UPDATE_ROUNDS, Memory};
pub use crate::retention::{
    BACKUP_MAGIC, BackupSummary, DEFAULT_KEEP_DETAILS_DAYS, DEFAULT_KEEP_LAST,
};
pub use crate::task::rerun::Rerun;
pub use crate::task::store::Task;

/// How durable each commit is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is on disk before it returns (fsync per commit). The default.
    #[default]
    Full,
    /// Commits survive a crash of the process; a power loss may lose the last few.
    Normal,
}

impl std::str::FromStr for Synchronous {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "full" => Ok(Synchronous::Full),
            "normal" => Ok(Synchronous::Normal),
            _ => Err(Error::invalid(
                "synchronous",
                "must be \"full\" or \"normal\"",
            )),
        }
    }
}

/// How [`Store::connect_with`] opens a store. Each backend reads the options that concern it
/// and leaves the others, so one set of options serves any URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectOptions {
    /// How durable each write is (SQLite, files). Default [`Synchronous::Full`].
    pub synchronous: Synchronous,
    /// How long a call waits for another process's lock before it fails with
    /// [`Error::Busy`] (SQLite, files, PostgreSQL; on PostgreSQL also how long a transaction
    /// of this store may sit idle before the server ends it). Default 60 s.
    pub lock_patience: Duration,
    /// Opens an existing store for reading only; writes fail (SQLite; any other URL is
    /// refused). Default `false`.
    pub read_only: bool,
    /// At most this many connections (PostgreSQL); a call that finds them all in use waits
    /// for one up to `lock_patience`, then fails with [`Error::Busy`]. Default 8.
    pub pool_size: usize,
    /// How long connecting may take (PostgreSQL). Default 10 s; the URL's `connect_timeout`,
    /// when it names one, instead.
    pub connect_timeout: Duration,
}

impl ConnectOptions {
    /// Refuses, naming the option, what the store at `location` cannot honour: every problem
    /// at once, before anything is opened or created.
    fn check(&self, location: &Location) -> Result<()> {
        let mut problems = Vec::new();
        if self.read_only {
            let what = match location {
                Location::Sqlite(_) => None,
                Location::Memory => Some("an in-memory store"),
                Location::Files(_) => Some("a files store"),
                Location::Postgres(_) => Some("a PostgreSQL store"),
            };
            if let Some(what) = what {
                problems.push(Problem::new(
                    "read_only",
                    format!("only an SQLite store opens read-only, and the url names {what}"),
                ));
            }
        }
        if self.pool_size == 0 {
            problems.push(Problem::new("pool_size", "must be at least 1"));
        }
        if self.connect_timeout.is_zero() {
            problems.push(Problem::new(
                "connect_timeout",
                "must be more than 0 seconds",
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation { problems })
        }
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            synchronous: Synchronous::Full,
            lock_patience: Duration::from_secs(60),
            read_only: false,
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// The setting [`Store::save_policy`] writes.
const POLICY_SETTING: &str = "policy";

/// The form of a saved policy.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SavedPolicy {
    chain_policy: ChainPolicy,
    limits: Limits,
}

/// The lease a claim gets when the caller does not choose one.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);

/// How long a waiting worker goes without looking again, even without a signal: leases lapse
/// and handoffs expire with time, which no signal announces.
const RECHECK: Duration = Duration::from_secs(1);

/// How many due lapses one `claim_next` settles before it looks for work, so that a claim never
/// pays for a large backlog at once while the backlog still drains.
const REAP_BATCH: usize = 32;

/// A handoff store: create, claim, heartbeat, release, complete, and read the event log and
/// chains, on any [`Backend`].
///
/// Cheap to clone; clones share the backend.
///
/// ```
/// use std::time::Duration;
/// use handoff_core::{NewHandoff, Store};
///
/// let store = Store::memory();
/// let h = store.create(NewHandoff::new("task-1", "Summarise the logs").from_agent("claude"))?;
/// let claim = store.claim(&h.id, "gemini", Duration::from_secs(60))?;
/// let done = store.complete(&claim, "summary written to notes.md")?;
/// assert_eq!(done.status, handoff_core::Status::Completed);
/// assert_eq!(store.chain("task-1")?.to_string(), "claude → gemini");
/// # Ok::<(), handoff_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) clock: Arc<dyn Clock>,
    policy: Arc<ChainPolicy>,
    pub(crate) limits: Arc<Limits>,
}

impl Store {
    /// The backend, for the conformance suite's cases that have no `Store` operation yet.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// A store on `backend`, with the system clock, the default chain policy and limits.
    pub fn new(backend: impl Backend + 'static) -> Store {
        Store {
            backend: Arc::new(backend),
            clock: Arc::new(SystemClock),
            policy: Arc::default(),
            limits: Arc::default(),
        }
    }

    /// An in-memory store, for tests and ephemeral swarms.
    pub fn memory() -> Store {
        Store::new(memory::MemoryBackend::default())
    }

    /// Opens (or creates) an SQLite store at `path` with the default options
    /// (`synchronous=FULL`). `":memory:"` opens a private in-memory database. The policy and
    /// limits saved in the store ([`Store::save_policy`]) apply unless the caller sets its own.
    #[cfg(feature = "sqlite")]
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path, &sqlite::SqliteOptions::default())
    }

    /// Opens (or creates) an SQLite store at `path` with `options`.
    #[cfg(feature = "sqlite")]
    pub fn open_with(path: impl AsRef<Path>, options: &sqlite::SqliteOptions) -> Result<Store> {
        Store::new(sqlite::SqliteBackend::open(path, options)?).with_saved_policy()
    }

    /// Opens an existing SQLite store at `path` for reading only (see
    /// [`SqliteBackend::open_read_only`](sqlite::SqliteBackend::open_read_only)): nothing on
    /// disk is created or changed, and writes fail.
    #[cfg(feature = "sqlite")]
    pub fn open_read_only(
        path: impl AsRef<Path>,
        options: &sqlite::SqliteOptions,
    ) -> Result<Store> {
        Store::new(sqlite::SqliteBackend::open_read_only(path, options)?).with_saved_policy()
    }

    /// Opens the store `url` names (docs/design.md §10) with the default options: a path or
    /// `sqlite:PATH` (SQLite), `memory:`, `files:DIR` (a folder of JSON files), or
    /// `postgres://…` / `postgresql://…` with `?schema=NAME` to share one database (feature
    /// `postgres`). The saved policy and limits apply, as with [`Store::open`].
    ///
    /// Every store's calls block the calling thread: from async code, make them in
    /// `spawn_blocking`. (A PostgreSQL store called on an async runtime's thread still works,
    /// blocking with `block_in_place` or a thread of its own; it may be dropped there too.)
    pub fn connect(url: &str) -> Result<Store> {
        Store::connect_with(url, &ConnectOptions::default())
    }

    /// Opens the store `url` names with `options` (see [`ConnectOptions`] for which backend
    /// reads which option).
    pub fn connect_with(url: &str, options: &ConnectOptions) -> Result<Store> {
        let location = Location::parse(url)?;
        options.check(&location)?;
        match location {
            Location::Memory => Ok(Store::memory()),
            Location::Files(dir) => Store::new(files::FilesBackend::open_with(
                dir,
                options.synchronous,
                options.lock_patience,
            )?)
            .with_saved_policy(),
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => Store::new(postgres::PostgresBackend::connect(
                &url,
                &postgres::PostgresOptions {
                    pool_size: options.pool_size,
                    connect_timeout: options.connect_timeout,
                    lock_patience: options.lock_patience,
                },
            )?)
            .with_saved_policy(),
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(_) => Err(Error::invalid(
                "url",
                "names a PostgreSQL store, and this build has no `postgres` feature",
            )),
            #[cfg(feature = "sqlite")]
            Location::Sqlite(path) => {
                let sqlite = sqlite::SqliteOptions {
                    synchronous: options.synchronous,
                    lock_patience: options.lock_patience,
                };
                if options.read_only {
                    Store::open_read_only(path, &sqlite)
                } else {
                    Store::open_with(path, &sqlite)
                }
            }
            #[cfg(not(feature = "sqlite"))]
            Location::Sqlite(_) => Err(Error::invalid(
                "url",
                "names an SQLite store, and this build has no `sqlite` feature",
            )),
        }
    }

    /// Uses `clock` for every decision that depends on time.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Store {
        self.clock = clock;
        self
    }

    /// Checks new hops against `policy`.
    pub fn with_policy(mut self, policy: ChainPolicy) -> Store {
        self.policy = Arc::new(policy);
        self
    }

    /// Validates input against `limits`; a `max_depth` over [`validate::MAX_DEPTH`] is
    /// lowered to it (bindings refuse it with [`Limits::check`] first).
    pub fn with_limits(mut self, mut limits: Limits) -> Store {
        limits.max_depth = limits.max_depth.clamp(1, validate::MAX_DEPTH);
        self.limits = Arc::new(limits);
        self
    }

    /// Saves this store's chain policy and limits in the store itself, so that every process
    /// that opens it without its own — the CLI and the MCP server included — applies them.
    pub fn save_policy(&self) -> Result<()> {
        let saved = SavedPolicy {
            chain_policy: (*self.policy).clone(),
            limits: (*self.limits).clone(),
        };
        let json = serde_json::to_string(&saved).map_err(|e| Error::storage(e.to_string()))?;
        self.backend
            .write(&mut |tx| tx.set_setting(POLICY_SETTING, &json))
    }

    /// The policy and limits saved with [`Store::save_policy`], if any.
    pub fn saved_policy(&self) -> Result<Option<(ChainPolicy, Limits)>> {
        let Some(json) = self.backend.setting(POLICY_SETTING)? else {
            return Ok(None);
        };
        let saved: SavedPolicy = serde_json::from_str(&json)
            .map_err(|e| Error::storage(format!("the saved chain policy cannot be read: {e}")))?;
        Ok(Some((saved.chain_policy, saved.limits)))
    }

    /// Applies the saved policy and limits, if the store has them: what opening does.
    pub fn with_saved_policy(self) -> Result<Store> {
        Ok(match self.saved_policy()? {
            Some((policy, limits)) => self.with_policy(policy).with_limits(limits),
            None => self,
        })
    }

    /// The chain policy in force.
    pub fn policy(&self) -> &ChainPolicy {
        &self.policy
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The store's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Creates a pending handoff.
    ///
    /// With a caller-supplied id, creating again with the same content returns the stored
    /// record unchanged, and with different content fails with [`Error::Conflict`]. The hop is
    /// checked against the [`ChainPolicy`] in the same transaction that writes it.
    pub fn create(&self, new: NewHandoff) -> Result<Handoff> {
        let span = crate::trace::write("create", self, new.id.as_deref(), Some(&new.task_id), None);
        let _inside = span.enter();
        let (record, supplied_id) = self.prepare(new, self.clock.now())?;
        let mut existing = None;
        self.backend.write(&mut |tx| {
            existing = self.insert(tx, &record, supplied_id)?;
            Ok(())
        })?;
        Ok(existing.unwrap_or(record))
    }

    /// Creates several handoffs in one transaction: all of them, or none when one is refused.
    pub fn create_many(&self, news: Vec<NewHandoff>) -> Result<Vec<Handoff>> {
        let now = self.clock.now();
        let records = news
            .into_iter()
            .map(|new| self.prepare(new, now))
            .collect::<Result<Vec<_>>>()?;
        let mut existing = Vec::with_capacity(records.len());
        self.backend.write(&mut |tx| {
            existing.clear();
            for (record, supplied_id) in &records {
                existing.push(self.insert(tx, record, *supplied_id)?);
            }
            Ok(())
        })?;
        Ok(records
            .into_iter()
            .zip(existing)
            .map(|((record, _), existing)| existing.unwrap_or(record))
            .collect())
    }

    /// Turns creator input into a validated record; the bool says whether the id was supplied.
    fn prepare(&self, new: NewHandoff, now: DateTime<Utc>) -> Result<(Handoff, bool)> {
        let supplied = new.id.is_some();
        let id = new.id.clone().unwrap_or_else(|| new_id(now));
        let record = new.into_record(id, now);
        record.validate(&self.limits)?;
        Ok((record, supplied))
    }

    /// Inserts `record` with its `created` event; returns the stored twin instead when an
    /// idempotent create meets one.
    fn insert(
        &self,
        tx: &mut dyn Tx,
        record: &Handoff,
        supplied_id: bool,
    ) -> Result<Option<Handoff>> {
        // Generated ids are unique by construction; only a supplied one can meet a twin.
        if supplied_id && let Some(existing) = tx.get(&record.id)? {
            return if existing.same_content(record) {
                Ok(Some(existing))
            } else {
                Err(Error::Conflict {
                    id: record.id.clone(),
                })
            };
        }
        if let Some(parent) = &record.parent_id
            && tx.get(parent)?.is_none()
        {
            return Err(Error::invalid(
                "parent_id",
                format!("no handoff has id {parent}"),
            ));
        }
        if record.kind != Kind::Checkpoint {
            self.check_hop(tx, record, record.to_agent.as_deref())?;
        }
        write_created(tx, record, record.from_agent.clone())?;
        Ok(None)
    }

    /// Checks the hop `record` makes to `to` against the policy, with the task's other hops.
    fn check_hop(&self, tx: &mut dyn Tx, record: &Handoff, to: Option<&str>) -> Result<()> {
        if self.policy.is_unlimited() {
            // No path can break it: the task's hops need not be read (nor, on PostgreSQL,
            // its path locked).
            return Ok(());
        }
        let hops: Vec<Hop> = tx
            .hops(&record.task_id)?
            .into_iter()
            .filter(|hop| hop.kind != Kind::Checkpoint && hop.handoff_id != record.id)
            .collect();
        let new = NewHop {
            parent_id: record.parent_id.as_deref(),
            from: record.from_agent.as_deref(),
            to,
        };
        Ok(self.policy.check(&record.task_id, &hops, new)?)
    }

    /// Whether `agent` may take the open handoff `h` under the policy: the claimant of an
    /// open handoff is the hop's real successor (docs/design.md §4). Addressed handoffs were checked
    /// when they were created.
    fn check_claim(&self, tx: &mut dyn Tx, h: &Handoff, agent: &str) -> Result<()> {
        if h.to_agent.is_some() || h.kind == Kind::Checkpoint || h.status != Status::Pending {
            return Ok(());
        }
        self.check_hop(tx, h, Some(agent))
    }

    /// The handoff with this id.
    pub fn get(&self, id: &str) -> Result<Handoff> {
        validate::ident("id", id)?;
        self.backend.get(id)?.ok_or_else(|| Error::NotFound {
            what: "handoff",
            id: id.to_owned(),
        })
    }

    /// Handoffs matching `filter`, oldest first, as stored (see [`Store::reap`]).
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>> {
        if let Some(task) = &filter.task_id {
            validate::ident("task_id", task)?;
        }
        if let Some(agent) = &filter.to_agent {
            validate::agent("to_agent", agent)?;
        }
        if let Some(after) = &filter.after {
            validate::ident("after", after)?;
        }
        self.backend.list(filter)
    }

    /// Claims the handoff `id` for `agent` for `lease`.
    ///
    /// Fails with [`Error::AlreadyClaimed`] while another claim is live, with
    /// [`Error::InvalidTransition`] when the handoff is finished or addressed to another agent,
    /// and with [`Error::ChainViolation`] when the handoff is open and the chain policy does
    /// not let `agent` take it.
    pub fn claim(&self, id: &str, agent: &str, lease: Duration) -> Result<Claim> {
        validate::agent("agent", agent)?;
        validate::ident("id", id)?;
        let command = Command::Claim {
            agent: agent.to_owned(),
            lease: lease_delta("lease_seconds", lease)?,
        };
        let now = self.clock.now();
        let secret = ClaimSecret::generate()?;
        let handoff = self.change_one(id, &mut |tx, h| {
            if h.status == Status::Pending
                && let Some(reason) = crate::task::store::not_a_member(tx, &h, agent)?
            {
                return Err(Error::InvalidTransition {
                    id: h.id,
                    status: h.status,
                    event: "claim",
                    reason,
                });
            }
            self.check_claim(tx, &h, agent)?;
            take(tx, h, &command, now, &secret)
        })?;
        Ok(claim_of(handoff, secret, lease))
    }

    /// Claims the next pending handoff `agent` may take (addressed to it, or open and allowed
    /// by the chain policy), the highest priority first and the oldest within one, optionally
    /// only within `task_id`. `None` when there is nothing to
    /// claim.
    pub fn claim_next(
        &self,
        agent: &str,
        task_id: Option<&str>,
        lease: Duration,
    ) -> Result<Option<Claim>> {
        validate::agent("agent", agent)?;
        if let Some(task) = task_id {
            validate::ident("task_id", task)?;
        }
        let command = Command::Claim {
            agent: agent.to_owned(),
            lease: lease_delta("lease_seconds", lease)?,
        };
        let now = self.clock.now();
        let span = crate::trace::write("claim_next", self, None, task_id, Some(agent));
        let _inside = span.enter();
        let secret = ClaimSecret::generate()?;
        let mut claimed = None;
        let lock_open_path = !self.policy.is_unlimited();
        self.backend.write(&mut |tx| {
            claimed = None;
            let (due, mut next) =
                tx.lapsed_or_next(agent, task_id, now, REAP_BATCH, lock_open_path)?;
            if !due.is_empty() {
                settle(tx, due, now)?;
                next = tx.next_claimable(agent, task_id, now, None)?;
            }
            // Skips what the policy does not let `agent` take, and steps offered to the
            // members of tasks it did not join, oldest first.
            while let Some(h) = next.take() {
                if crate::task::store::not_a_member(tx, &h, agent)?.is_some() {
                    next = tx.next_claimable(agent, task_id, now, Some(&h.id))?;
                    continue;
                }
                match self.check_claim(tx, &h, agent) {
                    Ok(()) => {
                        claimed = Some(take(tx, h, &command, now, &secret)?);
                        break;
                    }
                    Err(Error::ChainViolation(_)) => {
                        next = tx.next_claimable(agent, task_id, now, Some(&h.id))?;
                    }
                    Err(other) => return Err(other),
                }
            }
            Ok(())
        })?;
        Ok(claimed.map(|handoff| claim_of(handoff, secret, lease)))
    }

    /// [`Store::claim_next`], waiting up to `wait` (real time) for work to arrive when there is
    /// none: the worker sleeps until the backend signals new or released work (at once on
    /// PostgreSQL, by a short poll elsewhere) instead of polling itself.
    pub fn claim_next_wait(
        &self,
        agent: &str,
        task_id: Option<&str>,
        lease: Duration,
        wait: Duration,
    ) -> Result<Option<Claim>> {
        if wait.is_zero() {
            return self.claim_next(agent, task_id, lease);
        }
        let deadline = std::time::Instant::now().checked_add(wait);
        // Work that is there already is taken without a subscription, which costs a read of
        // its own (a `LISTEN`, a fingerprint): a busy worker never pays for it. Once there is
        // none, the claim is tried again after subscribing, so that work arriving in between
        // is not slept through.
        if let Some(claim) = self.claim_next(agent, task_id, lease)? {
            return Ok(Some(claim));
        }
        let mut signal = self.backend.subscribe()?;
        loop {
            if let Some(claim) = self.claim_next(agent, task_id, lease)? {
                return Ok(Some(claim));
            }
            let left = match deadline {
                Some(at) => at.saturating_duration_since(std::time::Instant::now()),
                None => RECHECK,
            };
            if left.is_zero() {
                return Ok(None);
            }
            signal.wait(left.min(RECHECK))?;
        }
    }

    /// Extends the claim's lease by its original length, counted from now.
    ///
    /// Takes a [`Claim`] (`&claim`) or a [`ClaimRef`]; the claim's secret must match, or
    /// nothing changes and the caller gets [`Error::LeaseLost`].
    pub fn heartbeat(&self, claim: impl Into<ClaimRef>) -> Result<Handoff> {
        self.heartbeat_with(claim, None)
    }

    /// [`Store::heartbeat`], reporting `progress`: a small JSON value (at most
    /// [`MAX_PROGRESS_BYTES`](crate::record::MAX_PROGRESS_BYTES) as JSON) kept on the record
    /// until the next claim and carried by the `heartbeat` event. `None` keeps the last one.
    pub fn heartbeat_with(
        &self,
        claim: impl Into<ClaimRef>,
        progress: Option<serde_json::Value>,
    ) -> Result<Handoff> {
        let claim = claim.into();
        if let Some(progress) = &progress {
            let mut c = validate::Collector::default();
            crate::record::check_progress(&mut c, progress);
            c.finish()?;
        }
        let command = Command::Heartbeat {
            token: claim.token,
            lease: lease_delta("lease_seconds", claim.lease)?,
            progress,
        };
        self.settle_claim(&claim, &command)
    }

    /// Gives the handoff back; it becomes pending again with one more attempt counted.
    pub fn release(&self, claim: impl Into<ClaimRef>, reason: &str) -> Result<Handoff> {
        let claim = claim.into();
        self.check_text("reason", reason)?;
        let command = Command::Release {
            token: claim.token,
            reason: reason.to_owned(),
        };
        self.settle_claim(&claim, &command)
    }

    /// Reports that the work failed with `error`: the handoff becomes pending again with one
    /// more attempt counted, or, when that was its last allowed attempt (`max_attempts`),
    /// `failed` with the error as its outcome. Each failure is an event carrying the error.
    pub fn fail(&self, claim: impl Into<ClaimRef>, error: &str) -> Result<Handoff> {
        let claim = claim.into();
        if error.trim().is_empty() {
            return Err(Error::invalid("error", "must say what went wrong"));
        }
        self.check_text("error", error)?;
        let command = Command::Fail {
            token: claim.token,
            error: error.to_owned(),
        };
        self.settle_claim(&claim, &command)
    }

    /// Finishes the handoff with `outcome`.
    pub fn complete(&self, claim: impl Into<ClaimRef>, outcome: &str) -> Result<Handoff> {
        self.complete_counting(claim, outcome, None)
    }

    /// Finishes the handoff with `outcome`, reporting the model tokens the work took: the
    /// `completed` event carries them, and a task step adds them to its task's total (its
    /// history's `metrics.tokens_used`).
    pub fn complete_counting(
        &self,
        claim: impl Into<ClaimRef>,
        outcome: &str,
        tokens_used: Option<u64>,
    ) -> Result<Handoff> {
        let claim = claim.into();
        self.check_text("outcome", outcome)?;
        let command = Command::Complete {
            token: claim.token,
            outcome: outcome.to_owned(),
            tokens_used,
        };
        self.settle_claim(&claim, &command)
    }

    /// Withdraws the handoff as its holder, with its claim (docs/design.md §3: the creator may cancel
    /// by name with [`Store::cancel`]; a holder proves it holds the claim).
    pub fn cancel_claim(
        &self,
        claim: impl Into<ClaimRef>,
        reason: Option<&str>,
    ) -> Result<Handoff> {
        let claim = claim.into();
        if let Some(reason) = reason {
            self.check_text("reason", reason)?;
        }
        let command = Command::Cancel {
            by: None,
            reason: reason.map(str::to_owned),
            claim_token: Some(claim.token),
        };
        self.settle_claim(&claim, &command)
    }

    /// Applies a holder's `command` after checking the claim's secret, in one transaction.
    fn settle_claim(&self, claim: &ClaimRef, command: &Command) -> Result<Handoff> {
        self.settle_claim_then(claim, command, &mut |_, _| Ok(()))
    }

    /// [`Store::settle_claim`], and `then` on the settled record in the same transaction.
    fn settle_claim_then(
        &self,
        claim: &ClaimRef,
        command: &Command,
        then: &mut dyn FnMut(&mut dyn Tx, &Handoff) -> Result<()>,
    ) -> Result<Handoff> {
        let id = claim.handoff_id.as_str();
        validate::ident("handoff_id", id)?;
        let now = self.clock.now();
        self.change_one(id, &mut |tx, h| {
            prove_claim(tx, &h, claim)?;
            let settled = persist(tx, transition(h, command, now)?)?;
            then(tx, &settled)?;
            Ok(settled)
        })
    }

    /// Refuses the handoff as `agent`, which must be its addressee (or, for an open handoff,
    /// its current holder).
    pub fn reject(&self, id: &str, agent: &str, reason: &str) -> Result<Handoff> {
        validate::agent("agent", agent)?;
        self.check_text("reason", reason)?;
        let command = Command::Reject {
            agent: agent.to_owned(),
            reason: reason.to_owned(),
        };
        self.apply(id, &command)
    }

    /// Withdraws a pending or claimed handoff, as `by`: its creator (`from_agent`), or anyone
    /// when it has none. Its holder cancels with [`Store::cancel_claim`].
    pub fn cancel(&self, id: &str, by: &str, reason: Option<&str>) -> Result<Handoff> {
        validate::agent("by", by)?;
        if let Some(reason) = reason {
            self.check_text("reason", reason)?;
        }
        let command = Command::Cancel {
            by: Some(by.to_owned()),
            reason: reason.map(str::to_owned),
            claim_token: None,
        };
        self.apply(id, &command)
    }

    /// Takes the live claim on `id` away from its holder, as the operator `by`: the handoff is
    /// pending again with one more attempt counted, and the holder's token no longer works
    /// (its next heartbeat or complete gets [`Error::LeaseLost`]). For a holder that hangs
    /// without letting its lease lapse.
    pub fn revoke_claim(&self, id: &str, by: &str, reason: &str) -> Result<Handoff> {
        validate::agent("by", by)?;
        if reason.trim().is_empty() {
            return Err(Error::invalid(
                "reason",
                "must say why the claim is taken away",
            ));
        }
        self.check_text("reason", reason)?;
        let command = Command::Revoke {
            by: by.to_owned(),
            reason: reason.to_owned(),
        };
        self.apply(id, &command)
    }

    /// Puts a `failed`, `rejected` or `cancelled` handoff back in the queue as `pending`, as
    /// the operator `by`: its attempts count afresh from 0, and its log keeps the earlier
    /// ones and a `retried` event naming who and why. An expired handoff is not retried (its
    /// `expires_at` has passed), nor a completed one.
    pub fn retry(&self, id: &str, by: &str, reason: Option<&str>) -> Result<Handoff> {
        validate::agent("by", by)?;
        if let Some(reason) = reason {
            self.check_text("reason", reason)?;
        }
        let command = Command::Retry {
            by: by.to_owned(),
            reason: reason.map(str::to_owned),
        };
        self.apply(id, &command)
    }

    /// Changes the priority of a pending or claimed handoff, as `by`: `claim_next` takes the
    /// highest priority first, the oldest within one.
    pub fn set_priority(&self, id: &str, priority: i32, by: &str) -> Result<Handoff> {
        validate::agent("by", by)?;
        let command = Command::SetPriority {
            by: by.to_owned(),
            priority,
        };
        self.apply(id, &command)
    }

    /// Applies `command` to the handoff `id` at the clock's now, atomically with its events.
    /// A retry of a plan step's handoff is refused: its task retries the step, knowing what
    /// runs after it.
    pub fn apply(&self, id: &str, command: &Command) -> Result<Handoff> {
        validate::ident("id", id)?;
        let now = self.clock.now();
        self.change_one(id, &mut |tx, h| {
            if matches!(command, Command::Retry { .. }) && crate::task::store::carries_step(&h) {
                return Err(Error::InvalidTransition {
                    id: h.id.clone(),
                    status: h.status,
                    event: "retry",
                    reason: format!(
                        "it runs a step of task {}: retry it through the task \
                         (resolve_escalation with retry, or rerun_task)",
                        h.task_id
                    ),
                });
            }
            persist(tx, transition(h, command, now)?)
        })
    }

    /// Runs `change` on the record `id` as one write transaction sees it; `NotFound` when
    /// there is none. `change` may run again when the backend retries the transaction.
    pub(crate) fn change_one(
        &self,
        id: &str,
        change: &mut dyn FnMut(&mut dyn Tx, Handoff) -> Result<Handoff>,
    ) -> Result<Handoff> {
        let span = crate::trace::write("change", self, Some(id), None, None);
        let _inside = span.enter();
        let mut updated = None;
        let written = self.backend.write(&mut |tx| {
            let h = tx.get(id)?.ok_or_else(|| Error::NotFound {
                what: "handoff",
                id: id.to_owned(),
            })?;
            updated = Some(change(tx, h)?);
            Ok(())
        });
        let updated = written
            .and_then(|()| updated.ok_or_else(|| Error::storage("write returned no record")));
        crate::trace::outcome(&span, updated)
    }

    /// Applies every time-driven change that is due (lapsed leases, expired handoffs) and
    /// returns how many handoffs changed. `claim_next` does this for a bounded batch itself.
    pub fn reap(&self) -> Result<usize> {
        let now = self.clock.now();
        let mut changed = 0;
        self.backend.write(&mut |tx| {
            let due = tx.lapsed(now, usize::MAX)?;
            changed = settle(tx, due, now)?;
            Ok(())
        })?;
        Ok(changed)
    }

    /// The event log of one handoff, or of the whole store, oldest first. For a large log,
    /// read it in pages with [`Store::events_page`].
    pub fn events(&self, id: Option<&str>) -> Result<Vec<Event>> {
        self.events_page(&EventFilter {
            handoff_id: id.map(str::to_owned),
            ..EventFilter::default()
        })
    }

    /// A page of the event log, oldest first: of one handoff or one task, after the cursor
    /// `after` (the `seq` of the last event already read), at most `limit` events.
    ///
    /// ```
    /// use handoff_core::{EventFilter, NewHandoff, Store};
    ///
    /// let store = Store::memory();
    /// for i in 0..5 {
    ///     store.create(NewHandoff::new("t1", format!("step {i}")))?;
    /// }
    /// let mut page = EventFilter { task_id: Some("t1".into()), limit: Some(2), ..EventFilter::default() };
    /// let mut seen = 0;
    /// loop {
    ///     let events = store.events_page(&page)?;
    ///     let Some(last) = events.last() else { break };
    ///     page.after = Some(last.seq);
    ///     seen += events.len();
    /// }
    /// assert_eq!(seen, 5);
    /// # Ok::<(), handoff_core::Error>(())
    /// ```
    pub fn events_page(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        if let Some(id) = &filter.handoff_id {
            validate::ident("id", id)?;
        }
        if let Some(task) = &filter.task_id {
            validate::ident("task_id", task)?;
        }
        self.backend.events(filter)
    }

    /// What this store's backend can do beyond what every store does: whether it outlives the
    /// process, can be shared by processes or machines, writes backups, wakes waiting workers.
    pub fn capabilities(&self) -> Capabilities {
        self.backend.capabilities()
    }

    /// The task's chain of hops, oldest first.
    pub fn chain(&self, task_id: &str) -> Result<Chain> {
        validate::ident("task_id", task_id)?;
        let hops = self
            .backend
            .hops(task_id)?
            .into_iter()
            .filter(|hop| hop.kind != Kind::Checkpoint)
            .collect();
        Ok(Chain {
            task_id: task_id.to_owned(),
            hops,
        })
    }

    /// Saves `agent`'s progress on `task_id` without changing who owns what.
    ///
    /// A checkpoint is a record of kind `checkpoint` from and to `agent`, stored finished: it
    /// is never claimable and is not a hop of the chain. Its `parent_id` defaults to the task's
    /// latest record.
    pub fn checkpoint(&self, task_id: &str, agent: &str, progress: NewHandoff) -> Result<Handoff> {
        let now = self.clock.now();
        let mut new = progress;
        new.task_id = task_id.to_owned();
        new.kind = Kind::Checkpoint;
        new.from_agent = Some(agent.to_owned());
        new.to_agent = Some(agent.to_owned());
        let (mut record, supplied) = self.prepare(new, now)?;
        record.status = Status::Completed;
        record.completed_at = Some(now);
        record.outcome = Some("checkpoint".to_owned());
        let mut out = None;
        self.backend.write(&mut |tx| {
            let mut record = record.clone();
            if record.parent_id.is_none() {
                record.parent_id = tx.hops(task_id)?.last().map(|hop| hop.handoff_id.clone());
            }
            out = Some(match self.insert(tx, &record, supplied)? {
                Some(existing) => existing,
                None => record,
            });
            Ok(())
        })?;
        out.ok_or_else(|| Error::storage("write returned no record"))
    }

    /// Tasks in progress whose last sign of life (a claim, heartbeat or checkpoint) is older
    /// than `older_than`. A task is in progress while one of its handoffs is claimed, or while
    /// its latest record is a checkpoint.
    pub fn stalled(&self, older_than: Duration) -> Result<Vec<String>> {
        let cutoff = chrono::TimeDelta::from_std(older_than)
            .ok()
            .and_then(|span| self.clock.now().checked_sub_signed(span))
            // Further back than time goes: nothing can be older.
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let mut last_seen: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
        let mut seen = |task: &str, at: DateTime<Utc>| {
            let entry = last_seen.entry(task.to_owned()).or_insert(at);
            *entry = (*entry).max(at);
        };
        let claimed = self.backend.list(&ListFilter {
            status: Some(Status::Claimed),
            ..ListFilter::default()
        })?;
        for h in &claimed {
            seen(&h.task_id, h.heartbeat_at.unwrap_or(h.created_at));
        }
        let checkpoints = self.backend.list(&ListFilter {
            kind: Some(Kind::Checkpoint),
            ..ListFilter::default()
        })?;
        let mut latest_checkpoint: BTreeMap<&str, &Handoff> = BTreeMap::new();
        for h in &checkpoints {
            latest_checkpoint.insert(&h.task_id, h);
        }
        for (task, checkpoint) in latest_checkpoint {
            let hops = self.backend.hops(task)?;
            if hops
                .last()
                .is_some_and(|hop| hop.handoff_id == checkpoint.id)
            {
                seen(task, checkpoint.created_at);
            }
        }
        Ok(last_seen
            .into_iter()
            .filter(|(_, at)| *at < cutoff)
            .map(|(task, _)| task)
            .collect())
    }

    /// Per from→to pair: how many hand-offs, how many completed, failed or rejected, and the
    /// median seconds from creation to the first claim and to completion.
    pub fn stats(&self) -> Result<Vec<crate::stats::PathStats>> {
        self.backend.path_stats()
    }

    /// The queue at a glance: how many handoffs are in each status, per addressee
    /// (checkpoints left out), in status then agent order. Counted by the backend without
    /// loading records where it can (SQLite, PostgreSQL).
    pub fn queue_counts(&self) -> Result<Vec<QueueCount>> {
        self.backend.queue_counts()
    }

    pub(crate) fn check_text(&self, field: &str, text: &str) -> Result<()> {
        if text.len() > self.limits.max_field_bytes {
            return Err(Error::invalid(
                field,
                format!("must be at most {} bytes", self.limits.max_field_bytes),
            ));
        }
        Ok(())
    }
}

fn claim_of(handoff: Handoff, secret: ClaimSecret, lease: Duration) -> Claim {
    Claim {
        token: handoff.claim_token.unwrap_or_default(),
        handoff,
        secret,
        lease,
    }
}

/// Writes a new record with its `created` event, by `actor`, and lists it in its session.
fn write_created(tx: &mut dyn Tx, record: &Handoff, actor: Option<String>) -> Result<()> {
    tx.insert(record)?;
    crate::memory::sessions::note(tx, record)?;
    tx.append(NewEvent {
        handoff_id: record.id.clone(),
        at: record.created_at,
        actor,
        change: Change::Created {
            task_id: record.task_id.clone(),
            to_agent: record.to_agent.clone(),
            priority: record.priority,
        },
    })
}

/// Inserts `new` as a handoff made by the store itself (a task's step, a protocol run's
/// message) with its `created` event, by `actor`. The chain policy, which guards free-form
/// hand-offs, is not applied: a plan's steps and a protocol run's messages are bounded by
/// their own rules (a plan's shape, a run's iterations and retries).
pub(crate) fn insert_handoff(
    tx: &mut dyn Tx,
    new: NewHandoff,
    actor: Option<String>,
    limits: &Limits,
    now: DateTime<Utc>,
) -> Result<Handoff> {
    let record = new.into_record(new_id(now), now);
    record.validate(limits)?;
    write_created(tx, &record, actor)?;
    Ok(record)
}

/// Refuses `claim` on `h` when it presents `h`'s current token without the secret that its
/// claim handed out. A stale token is the state machine's to refuse.
pub(crate) fn prove_claim(tx: &mut dyn Tx, h: &Handoff, claim: &ClaimRef) -> Result<()> {
    if h.status == Status::Claimed && h.claim_token == Some(claim.token) {
        let proven = tx
            .claim_secret(&h.id)?
            .is_some_and(|digest| claim.secret.matches(&digest));
        if !proven {
            return Err(Error::LeaseLost {
                id: h.id.clone(),
                token: claim.token,
                reason: "the claim secret does not match: only the claimer can settle a claim"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// Claims `h` and keeps the digest of the claim's secret beside it.
fn take(
    tx: &mut dyn Tx,
    h: Handoff,
    command: &Command,
    now: DateTime<Utc>,
    secret: &ClaimSecret,
) -> Result<Handoff> {
    let claimed = persist(tx, transition(h, command, now)?)?;
    tx.set_claim_secret(&claimed.id, Some(secret.digest()))?;
    Ok(claimed)
}

/// Writes a transition's record and events, and applies them to the task step or the protocol
/// run the record carries, if any; returns the record.
pub(crate) fn persist(tx: &mut dyn Tx, t: Transition) -> Result<Handoff> {
    if t.events.is_empty() {
        return Ok(t.record);
    }
    tx.update(&t.record)?;
    if crate::task::store::carries_step(&t.record) {
        for event in &t.events {
            tx.append(event.clone())?;
        }
        crate::task::store::follow(tx, &t.record, &t.events)?;
    } else {
        for event in t.events {
            tx.append(event)?;
        }
    }
    if t.record.protocol.is_some() {
        crate::protocol::store::follow(tx, &t.record)?;
    }
    Ok(t.record)
}

/// Applies the time-driven changes of the records `due`; returns how many there were.
fn settle(tx: &mut dyn Tx, due: Vec<Handoff>, now: DateTime<Utc>) -> Result<usize> {
    let count = due.len();
    for h in due {
        persist(tx, transition(h, &Command::Tick, now)?)?;
    }
    Ok(count)
}

/// A new time-ordered id: a UUIDv7 from the store's clock, monotonic within the process.
pub(crate) fn new_id(now: DateTime<Utc>) -> String {
    static CONTEXT: Mutex<Option<ContextV7>> = Mutex::new(None);
    let mut context = CONTEXT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let context = context.get_or_insert_with(ContextV7::new);
    let seconds = u64::try_from(now.timestamp()).unwrap_or(0);
    let ts = Timestamp::from_unix(&*context, seconds, now.timestamp_subsec_nanos());
    Uuid::new_v7(ts).to_string()
}
