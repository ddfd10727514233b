//! `handoff_core.Store`, `Claim` and `open`: the core's `Store`, with every call that touches
//! the backend run with the GIL released.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::{DEFAULT_LEASE, EventFilter, ListFilter};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::chain::{Chain, ChainPolicy};
use crate::clock::ManualClock;
use crate::convert::{Args, py_repr, seconds};
use crate::errors::Result;
use crate::machine::Event;
use crate::record::{Fields, Handoff, as_arguments, finish_new, new_from_dict};
use crate::stats::PathStats;
use crate::validate::Limits;

/// A live claim: the handoff as claimed, the public fencing token and the claim secret that
/// proves ownership. Only `claim()` and `claim_next()` make one; whoever holds it (or its
/// secret) can settle the claim, so keep it as private as a password. Its `repr` hides the
/// secret. It pickles *with* the secret, for handing it to the claimer's own worker processes.
#[pyclass(module = "handoff_core", name = "Claim", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Claim {
    inner: core::Claim,
}

#[pymethods]
impl Claim {
    /// The handoff, as it was when claimed.
    #[getter]
    fn handoff(&self) -> Handoff {
        Handoff::new(self.inner.handoff.clone())
    }

    /// The fencing token: public and increasing with every claim, for fencing writes
    /// downstream. Not enough to settle the claim: that needs the `secret` too.
    #[getter]
    fn token(&self) -> u64 {
        self.inner.token
    }

    /// The claim secret (`hcs_` and 64 hex digits): shown to the claimer only, stored only as
    /// a digest. Heartbeat, release, complete and `cancel_claim` need it.
    #[getter]
    fn secret(&self) -> &str {
        self.inner.secret.expose()
    }

    /// The claimed handoff's id.
    #[getter]
    fn handoff_id(&self) -> &str {
        self.inner.handoff_id()
    }

    /// The lease length in seconds; `heartbeat` extends the lease by this much.
    #[getter]
    fn lease_seconds(&self) -> f64 {
        seconds(self.inner.lease)
    }

    /// The `ClaimRef` that settles this claim without the record, e.g. in another process.
    fn reference(&self) -> ClaimRef {
        ClaimRef {
            inner: self.inner.reference(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Claim(handoff_id={}, token={}, secret=<hidden>, lease_seconds={})",
            py_repr(&self.inner.handoff.id),
            self.inner.token,
            seconds(self.inner.lease)
        )
    }

    /// Pickles with the secret (the pickle is as private as the claim), so that the claimer can
    /// pass its claim to its own worker processes.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let claim = slf.get();
        let args = (
            Handoff::new(claim.inner.handoff.clone()),
            claim.inner.token,
            claim.inner.secret.expose(),
            seconds(claim.inner.lease),
        );
        let restore = py.get_type::<Claim>().getattr("_restore")?;
        Ok((restore, args.into_pyobject(py)?))
    }

    /// Unpickles a claim. Needs the secret, so it rebuilds only what its holder had.
    #[staticmethod]
    fn _restore(
        handoff: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        secret: &Bound<'_, PyAny>,
        lease_seconds: &Bound<'_, PyAny>,
    ) -> Result<Claim> {
        let mut args = Args::new();
        let handoff = match handoff.cast::<Handoff>() {
            Ok(h) => Some(h.get().inner.clone()),
            Err(_) => {
                args.problem("handoff", "must be a Handoff");
                None
            }
        };
        let parts = ref_parts(
            &mut args,
            handoff.as_ref().map(|h| h.id.clone()),
            token,
            secret,
            Some(lease_seconds),
        );
        args.finish()?;
        match (handoff, parts) {
            (Some(handoff), Some(parts)) => Ok(Claim {
                inner: core::Claim {
                    handoff,
                    token: parts.token,
                    secret: parts.secret,
                    lease: parts.lease,
                },
            }),
            _ => Err(core::Error::invalid("claim", "cannot be restored").into()),
        }
    }
}

/// Reads a claim's token, secret and lease, reporting each bad one.
fn ref_parts(
    args: &mut Args,
    handoff_id: Option<String>,
    token: &Bound<'_, PyAny>,
    secret: &Bound<'_, PyAny>,
    lease_seconds: Option<&Bound<'_, PyAny>>,
) -> Option<core::ClaimRef> {
    let token = if token.is_none() {
        args.problem("token", "must be an int, not NoneType");
        None
    } else {
        args.opt_int::<u64>("token", Some(token), "a whole number at least 0")
    };
    let secret = if secret.is_none() {
        args.problem("secret", "must be a str, not NoneType");
        None
    } else {
        args.opt_text("secret", Some(secret))
    };
    let secret = secret.and_then(|text| match core::ClaimSecret::parse(&text) {
        Ok(secret) => Some(secret),
        Err(err) => {
            args.core_problems("secret", err);
            None
        }
    });
    let lease = args
        .opt_lease("lease_seconds", lease_seconds)
        .unwrap_or(DEFAULT_LEASE);
    Some(core::ClaimRef {
        handoff_id: handoff_id?,
        token: token?,
        secret: secret?,
        lease,
    })
}

/// What heartbeat, release, complete and `cancel_claim` need of a claim, without the record:
/// the handoff's id, the fencing token, the claim secret and the lease length. A process that
/// was handed these four values (by the claimer) builds one to settle the claim; `Claim`
/// objects are accepted wherever a `ClaimRef` is. Its `repr` hides the secret.
#[pyclass(module = "handoff_core", name = "ClaimRef", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct ClaimRef {
    inner: core::ClaimRef,
}

#[pymethods]
impl ClaimRef {
    #[new]
    #[pyo3(signature = (handoff_id, token, secret, lease_seconds=None))]
    fn py_new(
        handoff_id: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        secret: &Bound<'_, PyAny>,
        lease_seconds: Option<&Bound<'_, PyAny>>,
    ) -> Result<ClaimRef> {
        let mut args = Args::new();
        let id = args.text("handoff_id", handoff_id);
        let parts = ref_parts(&mut args, Some(id), token, secret, lease_seconds);
        args.finish()?;
        let inner = parts.ok_or_else(|| core::Error::invalid("claim", "is incomplete"))?;
        Ok(ClaimRef { inner })
    }

    /// The claimed handoff's id.
    #[getter]
    fn handoff_id(&self) -> &str {
        &self.inner.handoff_id
    }

    /// The claim's fencing token.
    #[getter]
    fn token(&self) -> u64 {
        self.inner.token
    }

    /// The claim secret.
    #[getter]
    fn secret(&self) -> &str {
        self.inner.secret.expose()
    }

    /// The lease length in seconds, renewed by each heartbeat.
    #[getter]
    fn lease_seconds(&self) -> f64 {
        seconds(self.inner.lease)
    }

    fn __repr__(&self) -> String {
        format!(
            "ClaimRef(handoff_id={}, token={}, secret=<hidden>, lease_seconds={})",
            py_repr(&self.inner.handoff_id),
            self.inner.token,
            seconds(self.inner.lease)
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let claim = &slf.get().inner;
        let args = (
            claim.handoff_id.as_str(),
            claim.token,
            claim.secret.expose(),
            seconds(claim.lease),
        );
        Ok((
            py.get_type::<ClaimRef>().into_any(),
            args.into_pyobject(py)?,
        ))
    }
}

/// The claim argument of `heartbeat`, `release`, `complete` and `cancel_claim`: a `Claim` or a
/// `ClaimRef`.
fn claim_arg(args: &mut Args, claim: &Bound<'_, PyAny>) -> Option<core::ClaimRef> {
    if let Ok(claim) = claim.cast::<Claim>() {
        Some(claim.get().inner.reference())
    } else if let Ok(claim) = claim.cast::<ClaimRef>() {
        Some(claim.get().inner.clone())
    } else {
        args.problem(
            "claim",
            "must be a Claim returned by claim() or claim_next(), or a ClaimRef",
        );
        None
    }
}

/// A handoff store. Use it as a context manager to close it when done; a closed store refuses
/// every call with `StorageError`.
#[pyclass(module = "handoff_core", name = "Store", frozen)]
pub struct Store {
    inner: Mutex<Option<core::Store>>,
    description: String,
}

impl Store {
    fn wrap(store: core::Store, description: String) -> Store {
        Store {
            inner: Mutex::new(Some(store)),
            description,
        }
    }

    /// The core store, shared (a clone shares the backend), or a storage error once closed.
    fn store(&self) -> Result<core::Store> {
        let guard = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard
            .clone()
            .ok_or_else(|| core::Error::storage(format!("{} is closed", self.description)).into())
    }

    fn max_depth(store: &core::Store) -> usize {
        store.limits().max_depth
    }
}

/// Applies the optional clock, policy and limits to a new store.
fn configure(
    mut store: core::Store,
    clock: Option<&Bound<'_, ManualClock>>,
    policy: Option<&Bound<'_, ChainPolicy>>,
    limits: Option<&Bound<'_, Limits>>,
) -> core::Store {
    if let Some(clock) = clock {
        store = store.with_clock(clock.get().shared());
    }
    if let Some(policy) = policy {
        store = store.with_policy(policy.get().inner.clone());
    }
    if let Some(limits) = limits {
        store = store.with_limits(limits.get().inner.clone());
    }
    store
}

/// Opens (or creates) an SQLite store at `path`. `synchronous="normal"` trades the last
/// commits before a power loss for speed; `":memory:"` opens a private in-memory database.
/// `read_only=True` opens an existing store without creating or changing anything on disk
/// (writes then fail with `StorageError`). Without `policy`/`limits`, the ones saved in the
/// store (`save_policy`) apply. A writer waits at most `lock_patience_seconds` for another
/// (then `Busy`).
#[pyfunction]
#[pyo3(signature = (path, synchronous=None, *, clock=None, policy=None, limits=None, lock_patience_seconds=None, read_only=false))]
#[allow(clippy::too_many_arguments)]
pub fn open(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    synchronous: Option<&Bound<'_, PyAny>>,
    clock: Option<&Bound<'_, ManualClock>>,
    policy: Option<&Bound<'_, ChainPolicy>>,
    limits: Option<&Bound<'_, Limits>>,
    lock_patience_seconds: Option<&Bound<'_, PyAny>>,
    read_only: bool,
) -> Result<Store> {
    let mut args = Args::new();
    let path = match path.extract::<std::path::PathBuf>() {
        Ok(path) => Some(path),
        Err(_) => {
            args.problem("path", "must be a str or os.PathLike");
            None
        }
    };
    let mut options = core::SqliteOptions::default();
    if let Some(sync) = args.opt_parsed::<core::Synchronous>("synchronous", synchronous) {
        options.synchronous = sync;
    }
    if let Some(patience) = lock_patience_seconds.filter(|p| !p.is_none()) {
        options.lock_patience = args.duration("lock_patience_seconds", patience);
    }
    args.finish()?;
    let path = path.unwrap_or_default();
    let description = if read_only {
        format!("store {} (read-only)", path.display())
    } else {
        format!("store {}", path.display())
    };
    let store = py.detach(|| {
        if read_only {
            core::Store::open_read_only(&path, &options)
        } else {
            core::Store::open_with(&path, &options)
        }
    })?;
    Ok(Store::wrap(
        configure(store, clock, policy, limits),
        description,
    ))
}

#[pymethods]
impl Store {
    /// An in-memory store, for tests and ephemeral swarms.
    #[staticmethod]
    #[pyo3(signature = (*, clock=None, policy=None, limits=None))]
    fn memory(
        clock: Option<&Bound<'_, ManualClock>>,
        policy: Option<&Bound<'_, ChainPolicy>>,
        limits: Option<&Bound<'_, Limits>>,
    ) -> Store {
        let store = configure(core::Store::memory(), clock, policy, limits);
        Store::wrap(store, "memory store".to_owned())
    }

    /// Creates a pending handoff. `None` for an argument means the core's default.
    #[pyo3(signature = (
        task_id, goal, *, from_agent=None, to_agent=None, kind=None, reason=None,
        context_pct=None, progress=None, completed=None, pending=None, decisions=None,
        assumptions=None, warnings=None, errors=None, files=None, instructions=None,
        metadata=None, id=None, parent_id=None, session_id=None, blockers=None,
        locked_files=None, priority_items=None, success_criteria=None, expires_at=None,
        max_attempts=None, timeout_seconds=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn create<'py>(
        &self,
        py: Python<'py>,
        task_id: &Bound<'py, PyAny>,
        goal: &Bound<'py, PyAny>,
        from_agent: Option<&Bound<'py, PyAny>>,
        to_agent: Option<&Bound<'py, PyAny>>,
        kind: Option<&Bound<'py, PyAny>>,
        reason: Option<&Bound<'py, PyAny>>,
        context_pct: Option<&Bound<'py, PyAny>>,
        progress: Option<&Bound<'py, PyAny>>,
        completed: Option<&Bound<'py, PyAny>>,
        pending: Option<&Bound<'py, PyAny>>,
        decisions: Option<&Bound<'py, PyAny>>,
        assumptions: Option<&Bound<'py, PyAny>>,
        warnings: Option<&Bound<'py, PyAny>>,
        errors: Option<&Bound<'py, PyAny>>,
        files: Option<&Bound<'py, PyAny>>,
        instructions: Option<&Bound<'py, PyAny>>,
        metadata: Option<&Bound<'py, PyAny>>,
        id: Option<&Bound<'py, PyAny>>,
        parent_id: Option<&Bound<'py, PyAny>>,
        session_id: Option<&Bound<'py, PyAny>>,
        blockers: Option<&Bound<'py, PyAny>>,
        locked_files: Option<&Bound<'py, PyAny>>,
        priority_items: Option<&Bound<'py, PyAny>>,
        success_criteria: Option<&Bound<'py, PyAny>>,
        expires_at: Option<&Bound<'py, PyAny>>,
        max_attempts: Option<&Bound<'py, PyAny>>,
        timeout_seconds: Option<&Bound<'py, PyAny>>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let fields = Fields {
            task_id: Some(task_id),
            goal: Some(goal),
            from_agent,
            to_agent,
            kind,
            reason,
            context_pct,
            progress,
            completed,
            pending,
            decisions,
            assumptions,
            warnings,
            errors,
            files,
            instructions,
            metadata,
            id,
            parent_id,
            session_id,
            blockers,
            locked_files,
            priority_items,
            success_criteria,
            expires_at,
            max_attempts,
            timeout_seconds,
        };
        let mut args = Args::new();
        let new = fields.to_new(&mut args, Self::max_depth(&store));
        finish_new(args, &new, store.limits())?;
        Ok(Handoff::new(
            py.detach(|| store.create(new)).map_err(as_arguments)?,
        ))
    }

    /// Creates several handoffs in one transaction: all of them, or none when one is refused.
    /// Each item is a dict of `create()` keyword arguments.
    fn create_many(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> Result<Vec<Handoff>> {
        let store = self.store()?;
        let mut args = Args::new();
        let items: Vec<Bound<'_, PyAny>> = if let Ok(list) = records.cast::<PyList>() {
            list.iter().collect()
        } else if let Ok(tuple) = records.cast::<PyTuple>() {
            tuple.iter().collect()
        } else {
            args.problem("records", "must be a list of dicts");
            Vec::new()
        };
        let max_depth = Self::max_depth(&store);
        let news: Vec<_> = items
            .iter()
            .enumerate()
            .map(|(i, item)| new_from_dict(&mut args, item, &format!("records[{i}]."), max_depth))
            .collect();
        args.finish()?;
        let created = py
            .detach(|| store.create_many(news))
            .map_err(as_arguments)?;
        Ok(created.into_iter().map(Handoff::new).collect())
    }

    /// The handoff with this id; `NotFound` if there is none.
    fn get(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let id = args.text("id", id);
        args.finish()?;
        Ok(Handoff::new(py.detach(|| store.get(&id))?))
    }

    /// Handoffs matching every given filter, oldest first.
    #[pyo3(signature = (status=None, task_id=None, to_agent=None, limit=None, *, kind=None))]
    fn list(
        &self,
        py: Python<'_>,
        status: Option<&Bound<'_, PyAny>>,
        task_id: Option<&Bound<'_, PyAny>>,
        to_agent: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        kind: Option<&Bound<'_, PyAny>>,
    ) -> Result<Vec<Handoff>> {
        let store = self.store()?;
        let mut args = Args::new();
        let filter = ListFilter {
            status: args.opt_parsed("status", status),
            task_id: args.opt_text("task_id", task_id),
            to_agent: args.opt_text("to_agent", to_agent),
            kind: args.opt_parsed("kind", kind),
            limit: args.opt_int("limit", limit, "a whole number at least 0"),
            after: None,
        };
        args.finish()?;
        let found = py.detach(|| store.list(&filter))?;
        Ok(found.into_iter().map(Handoff::new).collect())
    }

    /// Claims the handoff `id` for `agent`; `AlreadyClaimed` while another claim is live.
    #[pyo3(signature = (id, agent, lease_seconds=None))]
    fn claim(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        agent: &Bound<'_, PyAny>,
        lease_seconds: Option<&Bound<'_, PyAny>>,
    ) -> Result<Claim> {
        let store = self.store()?;
        let mut args = Args::new();
        let id = args.text("id", id);
        let agent = args.text("agent", agent);
        let lease = args
            .opt_lease("lease_seconds", lease_seconds)
            .unwrap_or(DEFAULT_LEASE);
        args.finish()?;
        let inner = py.detach(|| store.claim(&id, &agent, lease))?;
        Ok(Claim { inner })
    }

    /// Claims the oldest pending handoff `agent` may take, optionally within `task_id`;
    /// `None` when there is nothing to claim.
    #[pyo3(signature = (agent, task_id=None, lease_seconds=None))]
    fn claim_next(
        &self,
        py: Python<'_>,
        agent: &Bound<'_, PyAny>,
        task_id: Option<&Bound<'_, PyAny>>,
        lease_seconds: Option<&Bound<'_, PyAny>>,
    ) -> Result<Option<Claim>> {
        let store = self.store()?;
        let mut args = Args::new();
        let agent = args.text("agent", agent);
        let task_id = args.opt_text("task_id", task_id);
        let lease = args
            .opt_lease("lease_seconds", lease_seconds)
            .unwrap_or(DEFAULT_LEASE);
        args.finish()?;
        let claimed = py.detach(|| store.claim_next(&agent, task_id.as_deref(), lease))?;
        Ok(claimed.map(|inner| Claim { inner }))
    }

    /// Extends the claim's lease by its original length from now; `LeaseLost` if the claim is
    /// no longer current or its secret does not match. Takes a `Claim` or a `ClaimRef`.
    fn heartbeat(&self, py: Python<'_>, claim: &Bound<'_, PyAny>) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let claim = claim_arg(&mut args, claim);
        args.finish()?;
        let claim = claim.ok_or_else(|| core::Error::invalid("claim", "must be a Claim"))?;
        Ok(Handoff::new(py.detach(|| store.heartbeat(&claim))?))
    }

    /// Gives the handoff back (pending again, one more attempt counted).
    fn release(
        &self,
        py: Python<'_>,
        claim: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let claim = claim_arg(&mut args, claim);
        let reason = args.text("reason", reason);
        args.finish()?;
        let claim = claim.ok_or_else(|| core::Error::invalid("claim", "must be a Claim"))?;
        Ok(Handoff::new(py.detach(|| store.release(&claim, &reason))?))
    }

    /// Finishes the handoff with `outcome`.
    #[pyo3(signature = (claim, outcome=None))]
    fn complete(
        &self,
        py: Python<'_>,
        claim: &Bound<'_, PyAny>,
        outcome: Option<&Bound<'_, PyAny>>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let claim = claim_arg(&mut args, claim);
        let outcome = args.opt_text("outcome", outcome).unwrap_or_default();
        args.finish()?;
        let claim = claim.ok_or_else(|| core::Error::invalid("claim", "must be a Claim"))?;
        Ok(Handoff::new(
            py.detach(|| store.complete(&claim, &outcome))?,
        ))
    }

    /// Refuses the handoff as `agent`, its addressee.
    fn reject(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        agent: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let id = args.text("id", id);
        let agent = args.text("agent", agent);
        let reason = args.text("reason", reason);
        args.finish()?;
        Ok(Handoff::new(
            py.detach(|| store.reject(&id, &agent, &reason))?,
        ))
    }

    /// Withdraws a pending or claimed handoff as `by`, its creator (`from_agent`), or anyone
    /// when it has none; `InvalidTransition` for anyone else. Its holder uses `cancel_claim`.
    #[pyo3(signature = (id, by, reason=None))]
    fn cancel(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        by: &Bound<'_, PyAny>,
        reason: Option<&Bound<'_, PyAny>>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let id = args.text("id", id);
        let by = args.text("by", by);
        let reason = args.opt_text("reason", reason);
        args.finish()?;
        Ok(Handoff::new(
            py.detach(|| store.cancel(&id, &by, reason.as_deref()))?,
        ))
    }

    /// Withdraws the handoff as its holder, with its claim (a `Claim` or a `ClaimRef`).
    #[pyo3(signature = (claim, reason=None))]
    fn cancel_claim(
        &self,
        py: Python<'_>,
        claim: &Bound<'_, PyAny>,
        reason: Option<&Bound<'_, PyAny>>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let claim = claim_arg(&mut args, claim);
        let reason = args.opt_text("reason", reason);
        args.finish()?;
        let claim = claim.ok_or_else(|| core::Error::invalid("claim", "must be a Claim"))?;
        Ok(Handoff::new(py.detach(|| {
            store.cancel_claim(&claim, reason.as_deref())
        })?))
    }

    /// Writes a consistent copy of the store to `path` (a new file; it must not exist) while
    /// the store stays in use: an SQLite snapshot, readable by its owner only.
    fn backup(&self, py: Python<'_>, path: std::path::PathBuf) -> Result<()> {
        let store = self.store()?;
        Ok(py.detach(|| store.backup(&path))?)
    }

    /// Applies every time-driven change that is due (lapsed leases, expiry); returns how many
    /// handoffs changed.
    fn reap(&self, py: Python<'_>) -> Result<usize> {
        let store = self.store()?;
        Ok(py.detach(|| store.reap())?)
    }

    /// The event log, oldest first: of one handoff (`id`) or one task (`task_id`), or all of
    /// it. Read a large log in pages: `after` is the `seq` of the last event already read,
    /// `limit` the most events to return.
    #[pyo3(signature = (id=None, task_id=None, after=None, limit=None))]
    fn events(
        &self,
        py: Python<'_>,
        id: Option<&Bound<'_, PyAny>>,
        task_id: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
    ) -> Result<Vec<Event>> {
        let store = self.store()?;
        let mut args = Args::new();
        let filter = EventFilter {
            handoff_id: args.opt_text("id", id),
            task_id: args.opt_text("task_id", task_id),
            after: args.opt_int("after", after, "a whole number at least 0 (an event's seq)"),
            limit: args.opt_int("limit", limit, "a whole number at least 0"),
        };
        args.finish()?;
        let events = py.detach(|| store.events_page(&filter))?;
        Ok(events.into_iter().map(Event::new).collect())
    }

    /// Saves this store's chain policy and limits in the store itself, so that every process
    /// that opens it without its own (the CLI and the MCP server included) applies them.
    fn save_policy(&self, py: Python<'_>) -> Result<()> {
        let store = self.store()?;
        Ok(py.detach(|| store.save_policy())?)
    }

    /// The chain policy and limits saved with `save_policy`, or `None`.
    fn saved_policy(&self, py: Python<'_>) -> Result<Option<(ChainPolicy, Limits)>> {
        let store = self.store()?;
        let saved = py.detach(|| store.saved_policy())?;
        Ok(saved.map(|(policy, limits)| (ChainPolicy { inner: policy }, Limits { inner: limits })))
    }

    /// The chain policy in force (given, saved in the store, or the default).
    #[getter]
    fn policy(&self) -> Result<ChainPolicy> {
        Ok(ChainPolicy {
            inner: self.store()?.policy().clone(),
        })
    }

    /// The limits in force (given, saved in the store, or the default).
    #[getter]
    fn limits(&self) -> Result<Limits> {
        Ok(Limits {
            inner: self.store()?.limits().clone(),
        })
    }

    /// The task's chain of hops, oldest first.
    fn chain(&self, py: Python<'_>, task_id: &Bound<'_, PyAny>) -> Result<Chain> {
        let store = self.store()?;
        let mut args = Args::new();
        let task_id = args.text("task_id", task_id);
        args.finish()?;
        Ok(Chain::new(py.detach(|| store.chain(&task_id))?))
    }

    /// Saves `agent`'s progress on `task_id` without changing who owns what. Takes the same
    /// field arguments as `create` (except the ones a checkpoint fixes: from/to agent, kind).
    #[pyo3(signature = (
        task_id, agent, *, goal, reason=None, context_pct=None, progress=None, completed=None,
        pending=None, decisions=None, assumptions=None, warnings=None, errors=None, files=None,
        instructions=None, metadata=None, id=None, parent_id=None, session_id=None,
        blockers=None, locked_files=None, priority_items=None, success_criteria=None,
        expires_at=None, max_attempts=None, timeout_seconds=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn checkpoint<'py>(
        &self,
        py: Python<'py>,
        task_id: &Bound<'py, PyAny>,
        agent: &Bound<'py, PyAny>,
        goal: &Bound<'py, PyAny>,
        reason: Option<&Bound<'py, PyAny>>,
        context_pct: Option<&Bound<'py, PyAny>>,
        progress: Option<&Bound<'py, PyAny>>,
        completed: Option<&Bound<'py, PyAny>>,
        pending: Option<&Bound<'py, PyAny>>,
        decisions: Option<&Bound<'py, PyAny>>,
        assumptions: Option<&Bound<'py, PyAny>>,
        warnings: Option<&Bound<'py, PyAny>>,
        errors: Option<&Bound<'py, PyAny>>,
        files: Option<&Bound<'py, PyAny>>,
        instructions: Option<&Bound<'py, PyAny>>,
        metadata: Option<&Bound<'py, PyAny>>,
        id: Option<&Bound<'py, PyAny>>,
        parent_id: Option<&Bound<'py, PyAny>>,
        session_id: Option<&Bound<'py, PyAny>>,
        blockers: Option<&Bound<'py, PyAny>>,
        locked_files: Option<&Bound<'py, PyAny>>,
        priority_items: Option<&Bound<'py, PyAny>>,
        success_criteria: Option<&Bound<'py, PyAny>>,
        expires_at: Option<&Bound<'py, PyAny>>,
        max_attempts: Option<&Bound<'py, PyAny>>,
        timeout_seconds: Option<&Bound<'py, PyAny>>,
    ) -> Result<Handoff> {
        let store = self.store()?;
        let mut args = Args::new();
        let task = args.text("task_id", task_id);
        let agent = args.text("agent", agent);
        // The core sets the task, agents and kind of a checkpoint itself.
        let fields = Fields {
            goal: Some(goal),
            reason,
            context_pct,
            progress,
            completed,
            pending,
            decisions,
            assumptions,
            warnings,
            errors,
            files,
            instructions,
            metadata,
            id,
            parent_id,
            session_id,
            blockers,
            locked_files,
            priority_items,
            success_criteria,
            expires_at,
            max_attempts,
            timeout_seconds,
            ..Fields::default()
        };
        let mut new = fields.to_new(&mut args, Self::max_depth(&store));
        new.task_id.clone_from(&task);
        finish_new(args, &new, store.limits())?;
        let made = py.detach(|| store.checkpoint(&task, &agent, new));
        Ok(Handoff::new(made.map_err(as_arguments)?))
    }

    /// Ids of tasks in progress whose last sign of life (claim, heartbeat, checkpoint) is
    /// older than `older_than_seconds`.
    fn stalled(
        &self,
        py: Python<'_>,
        older_than_seconds: &Bound<'_, PyAny>,
    ) -> Result<Vec<String>> {
        let store = self.store()?;
        let mut args = Args::new();
        let older_than: Duration = args.duration("older_than_seconds", older_than_seconds);
        args.finish()?;
        Ok(py.detach(|| store.stalled(older_than))?)
    }

    /// Per from→to pair of agents: totals, outcomes and median times to claim and complete.
    fn stats(&self, py: Python<'_>) -> Result<Vec<PathStats>> {
        let store = self.store()?;
        let stats = py.detach(|| store.stats())?;
        Ok(stats.into_iter().map(PathStats::new).collect())
    }

    /// The store clock's current time.
    fn now(&self) -> Result<DateTime<Utc>> {
        Ok(self.store()?.now())
    }

    /// Closes the store; later calls fail with `StorageError`. Calls already running finish.
    fn close(&self) {
        let mut guard = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.take();
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        let guard = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " (closed)" } else { "" };
        format!("<handoff_core.Store {}{state}>", self.description)
    }
}
