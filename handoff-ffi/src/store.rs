//! The [`Store`] object and the records its methods take and return.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use handoff_core as core;

use crate::clock::ManualClock;
use crate::error::{HandoffError, Result, rename_field};
use crate::events::{Chain, Event, PathStats};
use crate::record::{CreateOptions, Handoff, HandoffKind, HandoffStatus};

/// How durable SQLite commits are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum Synchronous {
    /// Every commit survives a power loss (the default).
    Full,
    /// Faster; the last commits before a power loss may be lost, never corrupted.
    Normal,
}

/// Limits on how a task may travel between agents; a field left out keeps the default.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct ChainPolicy {
    /// Most hops along one path of a task (its ancestors by `parent_id`, or the hop that gave
    /// `from_agent` its work); parallel handoffs are separate paths. None is 5.
    #[uniffi(default)]
    pub max_handoffs: Option<u64>,
    /// How many times an agent may appear again along a path; none is 0.
    #[uniffi(default)]
    pub max_revisits: Option<u64>,
    /// Who may hand off to whom; none allows every pair. A sender missing from the map may
    /// hand off to nobody.
    #[uniffi(default)]
    pub collaborators: Option<HashMap<String, Vec<String>>>,
}

/// Limits on the size of records; a field left out keeps the default.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct Limits {
    /// The whole record in its JSON form, in bytes.
    #[uniffi(default)]
    pub max_record_bytes: Option<u64>,
    /// One text field or list item, in bytes.
    #[uniffi(default)]
    pub max_field_bytes: Option<u64>,
    /// Items in one list field.
    #[uniffi(default)]
    pub max_list_items: Option<u64>,
    /// Nesting depth of `metadata`.
    #[uniffi(default)]
    pub max_depth: Option<u64>,
}

/// How a store is opened.
#[derive(Clone, Debug, Default, uniffi::Record)]
pub struct OpenOptions {
    /// SQLite durability; none is `Full`. Ignored by a memory store.
    #[uniffi(default)]
    pub synchronous: Option<Synchronous>,
    /// How long a SQLite write waits for other processes' locks before it fails with
    /// `Storage`; none is 60 seconds. Ignored by a memory store.
    #[uniffi(default)]
    pub lock_patience: Option<Duration>,
    /// The chain policy checked before every new hop, and when an open handoff is claimed
    /// (the claimant is the hop's real `to`).
    #[uniffi(default)]
    pub policy: Option<ChainPolicy>,
    /// Size limits on records.
    #[uniffi(default)]
    pub limits: Option<Limits>,
    /// A clock to drive leases and expiry in tests; none is the system clock.
    #[uniffi(default)]
    pub clock: Option<Arc<ManualClock>>,
}

/// A live claim: the handoff as claimed and the fencing token that proves ownership.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Claim {
    /// The handoff, as it was when claimed.
    pub handoff: Handoff,
    /// The fencing token: heartbeat, release and complete must present it.
    pub token: u64,
    /// The lease length; a heartbeat renews it for as long again.
    pub lease: Duration,
}

/// Which handoffs `Store.list` returns; a field left out does not filter.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct ListFilter {
    /// Only records in this status.
    #[uniffi(default)]
    pub status: Option<HandoffStatus>,
    /// Only records of this task.
    #[uniffi(default)]
    pub task_id: Option<String>,
    /// Only records addressed to this agent.
    #[uniffi(default)]
    pub to_agent: Option<String>,
    /// Only records of this kind.
    #[uniffi(default)]
    pub kind: Option<HandoffKind>,
    /// At most this many records.
    #[uniffi(default)]
    pub limit: Option<u64>,
}

/// A handoff store: create, claim, heartbeat, release, complete, and read the event log and
/// chains. Open one with `Store.open(path)` (SQLite) or `Store.memory()`.
///
/// Every method may be called from any thread; SQLite stores may be shared between
/// processes.
#[derive(Debug, uniffi::Object)]
pub struct Store {
    inner: core::Store,
}

#[uniffi::export]
impl Store {
    /// Opens (creating if needed) the SQLite store at `path`; `":memory:"` gives a private
    /// in-memory database.
    #[uniffi::constructor(default(options))]
    pub fn open(path: String, options: OpenOptions) -> Result<Arc<Store>> {
        let defaults = core::SqliteOptions::default();
        let sqlite = core::SqliteOptions {
            synchronous: match options.synchronous {
                Some(Synchronous::Normal) => core::Synchronous::Normal,
                Some(Synchronous::Full) => core::Synchronous::Full,
                None => defaults.synchronous,
            },
            lock_patience: options.lock_patience.unwrap_or(defaults.lock_patience),
        };
        let store = configure(core::Store::open_with(&path, &sqlite)?, options);
        Ok(Arc::new(Store { inner: store }))
    }

    /// An in-memory store, for tests and ephemeral swarms.
    #[uniffi::constructor(default(options))]
    pub fn memory(options: OpenOptions) -> Result<Arc<Store>> {
        let store = configure(core::Store::memory(), options);
        Ok(Arc::new(Store { inner: store }))
    }

    /// Creates a pending handoff. With a caller-supplied `id`, creating again with the same
    /// content returns the stored record; with other content it fails with `Conflict`.
    pub fn create(&self, options: CreateOptions) -> Result<Handoff> {
        Ok(self.inner.create(options.into_core()?)?.into())
    }

    /// Creates several handoffs in one transaction: all of them, or none when one is refused.
    pub fn create_many(&self, items: Vec<CreateOptions>) -> Result<Vec<Handoff>> {
        let news = items
            .into_iter()
            .map(CreateOptions::into_core)
            .collect::<Result<Vec<_>>>()?;
        Ok(handoffs(self.inner.create_many(news)?))
    }

    /// The handoff with this id; `NotFound` if there is none.
    pub fn get(&self, id: String) -> Result<Handoff> {
        Ok(self.inner.get(&id)?.into())
    }

    /// Handoffs matching the filter, oldest first.
    #[uniffi::method(default(filter))]
    pub fn list(&self, filter: ListFilter) -> Result<Vec<Handoff>> {
        let filter = core::ListFilter {
            status: filter.status.map(Into::into),
            task_id: filter.task_id,
            to_agent: filter.to_agent,
            kind: filter.kind.map(Into::into),
            limit: filter
                .limit
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        };
        Ok(handoffs(self.inner.list(&filter)?))
    }

    /// Claims the handoff `id` for `agent` for `lease` (none is 300 seconds). `AlreadyClaimed`
    /// while another claim is live; `InvalidTransition` when it is finished or addressed to
    /// another agent; `ChainViolation` when it is open (no `to_agent`) and the chain policy
    /// does not let its sender hand off to `agent`.
    #[uniffi::method(default(lease = None))]
    pub fn claim(&self, id: String, agent: String, lease: Option<Duration>) -> Result<Claim> {
        let claim = self
            .inner
            .claim(&id, &agent, lease.unwrap_or(core::DEFAULT_LEASE))
            .map_err(lease_named)?;
        Ok(claim.into())
    }

    /// Claims the oldest pending handoff `agent` may take (addressed to it, or open and allowed
    /// by the chain policy: open handoffs it may not take are skipped), optionally only of
    /// `task_id`; none when there is nothing to take.
    #[uniffi::method(default(task_id = None, lease = None))]
    pub fn claim_next(
        &self,
        agent: String,
        task_id: Option<String>,
        lease: Option<Duration>,
    ) -> Result<Option<Claim>> {
        let claim = self
            .inner
            .claim_next(
                &agent,
                task_id.as_deref(),
                lease.unwrap_or(core::DEFAULT_LEASE),
            )
            .map_err(lease_named)?;
        Ok(claim.map(Into::into))
    }

    /// Renews the claim's lease; `LeaseLost` when the claim is no longer current.
    pub fn heartbeat(&self, claim: Claim) -> Result<Handoff> {
        let claim = claim.try_into()?;
        Ok(self.inner.heartbeat(&claim).map_err(lease_named)?.into())
    }

    /// Gives the handoff back for another agent to claim; `LeaseLost` when the claim is no
    /// longer current.
    pub fn release(&self, claim: Claim, reason: String) -> Result<Handoff> {
        Ok(self.inner.release(&claim.try_into()?, &reason)?.into())
    }

    /// Finishes the handoff with `outcome`; `LeaseLost` when the claim is no longer current.
    #[uniffi::method(default(outcome = ""))]
    pub fn complete(&self, claim: Claim, outcome: String) -> Result<Handoff> {
        Ok(self.inner.complete(&claim.try_into()?, &outcome)?.into())
    }

    /// The addressed agent (or the holder of an open handoff) refuses it.
    pub fn reject(&self, id: String, agent: String, reason: String) -> Result<Handoff> {
        Ok(self.inner.reject(&id, &agent, &reason)?.into())
    }

    /// Withdraws a pending or claimed handoff.
    #[uniffi::method(default(reason = None))]
    pub fn cancel(&self, id: String, by: String, reason: Option<String>) -> Result<Handoff> {
        Ok(self.inner.cancel(&id, &by, reason.as_deref())?.into())
    }

    /// Settles every lapsed lease and expired handoff now; returns how many changed.
    pub fn reap(&self) -> Result<u64> {
        Ok(self.inner.reap()? as u64)
    }

    /// The event log, oldest first: the whole store's, or only handoff `id`'s.
    #[uniffi::method(default(id = None))]
    pub fn events(&self, id: Option<String>) -> Result<Vec<Event>> {
        Ok(self
            .inner
            .events(id.as_deref())?
            .into_iter()
            .map(Event::from)
            .collect())
    }

    /// The task's hops in creation order.
    pub fn chain(&self, task_id: String) -> Result<Chain> {
        Ok(self.inner.chain(&task_id)?.into())
    }

    /// Saves `agent`'s progress on `fields.task_id` without changing who owns what: a finished
    /// record of kind `Checkpoint` from and to `agent`. `fields` must leave `kind`,
    /// `from_agent` and `to_agent` out: the checkpoint sets them.
    pub fn checkpoint(&self, agent: String, fields: CreateOptions) -> Result<Handoff> {
        for (field, given) in [
            ("kind", fields.kind.is_some()),
            ("from_agent", fields.from_agent.is_some()),
            ("to_agent", fields.to_agent.is_some()),
        ] {
            if given {
                return Err(HandoffError::invalid(
                    field,
                    "is set by checkpoint; leave it out",
                ));
            }
        }
        let task_id = fields.task_id.clone();
        Ok(self
            .inner
            .checkpoint(&task_id, &agent, fields.into_core()?)?
            .into())
    }

    /// Tasks in progress whose last sign of life (a claim, heartbeat or checkpoint) is older
    /// than `older_than`.
    pub fn stalled(&self, older_than: Duration) -> Result<Vec<String>> {
        Ok(self.inner.stalled(older_than)?)
    }

    /// Counts and median times per (from, to) agent pair.
    pub fn stats(&self) -> Result<Vec<PathStats>> {
        Ok(self
            .inner
            .stats()?
            .into_iter()
            .map(PathStats::from)
            .collect())
    }
}

/// The core calls the lease `lease_seconds`, as the Python and Node bindings do; here it is a
/// duration called `lease`.
fn lease_named(error: core::Error) -> HandoffError {
    rename_field(error, "lease_seconds", "lease").into()
}

fn handoffs(records: Vec<core::Handoff>) -> Vec<Handoff> {
    records.into_iter().map(Handoff::from).collect()
}

fn count(value: Option<u64>, default: usize) -> usize {
    value.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// Applies the clock, policy and limits of `options` to a freshly opened store.
fn configure(store: core::Store, options: OpenOptions) -> core::Store {
    let mut store = store;
    if let Some(clock) = options.clock {
        store = store.with_clock(clock.core());
    }
    if let Some(policy) = options.policy {
        let default = core::ChainPolicy::default();
        store = store.with_policy(core::ChainPolicy {
            max_handoffs: count(policy.max_handoffs, default.max_handoffs),
            max_revisits: count(policy.max_revisits, default.max_revisits),
            collaborators: policy.collaborators.map(|map| {
                map.into_iter()
                    .map(|(from, to)| (from, to.into_iter().collect()))
                    .collect()
            }),
        });
    }
    if let Some(limits) = options.limits {
        let default = core::Limits::default();
        store = store.with_limits(core::Limits {
            max_record_bytes: count(limits.max_record_bytes, default.max_record_bytes),
            max_field_bytes: count(limits.max_field_bytes, default.max_field_bytes),
            max_list_items: count(limits.max_list_items, default.max_list_items),
            max_depth: count(limits.max_depth, default.max_depth),
        });
    }
    store
}

impl From<core::Claim> for Claim {
    fn from(claim: core::Claim) -> Self {
        Claim {
            handoff: claim.handoff.into(),
            token: claim.token,
            lease: claim.lease,
        }
    }
}

impl TryFrom<Claim> for core::Claim {
    type Error = HandoffError;

    fn try_from(claim: Claim) -> Result<Self> {
        Ok(core::Claim {
            handoff: claim.handoff.try_into()?,
            token: claim.token,
            lease: claim.lease,
        })
    }
}
