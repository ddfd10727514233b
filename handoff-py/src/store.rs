//! `handoff_core.Store`, `Claim`, `open` and `connect`: the core's `Store`, with every call
//! that touches the backend run with the GIL released.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::DEFAULT_LEASE;
use handoff_core::ops::{self, Operation};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use serde_json::{Value, json};

use crate::bundles::{Bundle, ImportReport, TaskComparison, TaskReplay, TrustedKey};
use crate::chain::{Chain, ChainPolicy};
use crate::check::CheckReport;
use crate::clock::ManualClock;
use crate::context::Packet;
use crate::convert::{Args, py_repr, seconds, to_py};
use crate::curation::{Conversation, Fact, MergeReport, VerifyReport};
use crate::errors::Result;
use crate::machine::Event;
use crate::ops::{Arg, Given, Kwargs, ToPython, given};
use crate::protocol::{ProtocolRun, ProtocolStats};
use crate::record::Handoff;
use crate::stats::{PathStats, QueueCount};
use crate::tasks::{HistoryEntry, Memory, Session, Task, TaskEvent, TaskStatistics, TaskSummary};
use crate::validate::Limits;

/// How long a waiting `claim_next` goes without running Python's signal handlers.
const WAIT_SLICE: Duration = Duration::from_millis(250);

/// A live claim: the handoff as claimed, the public fencing token and the claim secret that
/// proves ownership. Only `claim()` and `claim_next()` make one; whoever holds it (or its
/// secret) can settle the claim, so keep it as private as a password. Its `repr` hides the
/// secret. It pickles *with* the secret, for handing it to the claimer's own worker processes.
#[pyclass(module = "handoff_core", name = "Claim", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Claim {
    inner: core::Claim,
}

impl Claim {
    pub(crate) fn new(inner: core::Claim) -> Claim {
        Claim { inner }
    }
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

/// The reference of a `Claim` or `ClaimRef` as the core's operations read it (`ClaimInput`),
/// or `None` for any other object.
pub(crate) fn claim_reference(obj: &Bound<'_, PyAny>) -> Option<Value> {
    let reference = if let Ok(claim) = obj.cast::<Claim>() {
        claim.get().inner.reference()
    } else {
        obj.cast::<ClaimRef>().ok()?.get().inner.clone()
    };
    Some(json!({
        "handoff_id": reference.handoff_id,
        "token": reference.token,
        "secret": reference.secret.expose(),
        "lease_seconds": seconds(reference.lease),
    }))
}

/// What a store can do beyond what every store does (`Store.capabilities()`), so that a program
/// can ask before relying on it: whether it outlives the process (`durable`), may be shared by
/// processes on one machine (`shared_by_processes`) or by machines (`shared_by_machines`),
/// writes consistent copies while in use (`backup`), and wakes a waiting `claim_next` when
/// work arrives instead of looking again at short intervals (`wakes_waiters`).
#[pyclass(module = "handoff_core", name = "Capabilities", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Capabilities {
    inner: core::Capabilities,
}

impl Capabilities {
    pub(crate) fn new(inner: core::Capabilities) -> Capabilities {
        Capabilities { inner }
    }
}

#[pymethods]
impl Capabilities {
    /// The store outlives the process that opened it.
    #[getter]
    fn durable(&self) -> bool {
        self.inner.durable
    }
    /// Several processes on one machine may share the store.
    #[getter]
    fn shared_by_processes(&self) -> bool {
        self.inner.shared_by_processes
    }
    /// Processes on several machines may share the store.
    #[getter]
    fn shared_by_machines(&self) -> bool {
        self.inner.shared_by_machines
    }
    /// `backup()` writes a consistent copy while the store stays in use.
    #[getter]
    fn backup(&self) -> bool {
        self.inner.backup
    }
    /// A worker waiting in `claim_next(wait_seconds=...)` is woken when work arrives.
    #[getter]
    fn wakes_waiters(&self) -> bool {
        self.inner.wakes_waiters
    }

    /// Every capability as a `dict` of `bool`s.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        // Destructured in full: a capability the core adds fails to compile here until shown.
        let core::Capabilities {
            durable,
            shared_by_processes,
            shared_by_machines,
            backup,
            wakes_waiters,
        } = self.inner;
        let b = |v: bool| if v { "True" } else { "False" };
        format!(
            "Capabilities(durable={}, shared_by_processes={}, shared_by_machines={}, backup={}, \
             wakes_waiters={})",
            b(durable),
            b(shared_by_processes),
            b(shared_by_machines),
            b(backup),
            b(wakes_waiters),
        )
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

    /// Runs the operation `O` with the arguments `given`.
    fn call<O>(&self, py: Python<'_>, given: Given<'_>) -> Result<<O::Output as ToPython>::Py>
    where
        O: Operation,
        O::Output: ToPython + Send,
    {
        let store = self.store()?;
        Ok(crate::ops::call::<O>(py, &store, given)?.to_python())
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

/// Reads the options of `open` and `connect` that say how a store is opened, reporting every
/// bad one by its name; the defaults are the core's. `pool_size` and `connect_timeout_seconds`
/// are `connect`'s only.
struct OpenArgs<'a, 'py> {
    synchronous: Option<&'a Bound<'py, PyAny>>,
    lock_patience_seconds: Option<&'a Bound<'py, PyAny>>,
    read_only: bool,
    pool_size: Option<&'a Bound<'py, PyAny>>,
    connect_timeout_seconds: Option<&'a Bound<'py, PyAny>>,
}

impl OpenArgs<'_, '_> {
    fn read(&self, args: &mut Args) -> core::ConnectOptions {
        let mut options = core::ConnectOptions {
            read_only: self.read_only,
            ..core::ConnectOptions::default()
        };
        if let Some(sync) = args.opt_parsed::<core::Synchronous>("synchronous", self.synchronous) {
            options.synchronous = sync;
        }
        if let Some(patience) = self.lock_patience_seconds.filter(|p| !p.is_none()) {
            options.lock_patience = args.duration("lock_patience_seconds", patience);
        }
        match args.opt_int::<usize>("pool_size", self.pool_size, "a whole number at least 1") {
            Some(0) => args.problem("pool_size", "must be a whole number at least 1"),
            Some(size) => options.pool_size = size,
            None => {}
        }
        let timeout = args.opt_seconds("connect_timeout_seconds", self.connect_timeout_seconds);
        if let Some(secs) = timeout {
            // Not NaN, and long enough to be one (a zero timeout would fail every connect).
            match Duration::try_from_secs_f64(secs) {
                Ok(timeout) if !timeout.is_zero() => options.connect_timeout = timeout,
                Err(_) if secs > 0.0 => options.connect_timeout = Duration::MAX,
                _ => args.problem("connect_timeout_seconds", "must be more than 0 seconds"),
            }
        }
        options
    }
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
    let options = OpenArgs {
        synchronous,
        lock_patience_seconds,
        read_only,
        pool_size: None,
        connect_timeout_seconds: None,
    }
    .read(&mut args);
    args.finish()?;
    // By path, not through `connect`: any path is a file name here (`memory:x`, `files:y`, one
    // that is not UTF-8), where `connect` would read some of them as URLs.
    let path = path.unwrap_or_default();
    let sqlite = core::SqliteOptions {
        synchronous: options.synchronous,
        lock_patience: options.lock_patience,
    };
    let description = if read_only {
        format!("store {} (read-only)", path.display())
    } else {
        format!("store {}", path.display())
    };
    let store = py.detach(|| {
        if read_only {
            core::Store::open_read_only(&path, &sqlite)
        } else {
            core::Store::open_with(&path, &sqlite)
        }
    })?;
    Ok(Store::wrap(
        configure(store, clock, policy, limits),
        description,
    ))
}

/// Opens the store `url` names: a path or `sqlite:PATH` (SQLite), `memory:`, `files:DIR` (a
/// folder of JSON files) or `postgres://…` (add `?schema=NAME` to share one database between
/// installations). Each store reads the options that concern it: `synchronous` (SQLite,
/// files), `lock_patience_seconds` (SQLite, files, PostgreSQL), `read_only` (SQLite only: any other URL is a
/// `ValidationError` naming `read_only`), `pool_size` and `connect_timeout_seconds`
/// (PostgreSQL). Without `policy`/`limits`, the ones saved in the store apply. A URL that names
/// no store is a `ValidationError` naming `url` (or the part that is wrong: `url.schema`,
/// `url.sslmode`, `url.sslrootcert`; TLS as libpq reads `sslmode`); a store that cannot be
/// reached, or whose certificate is refused, is a `StorageError`. Bad arguments leave nothing created.
#[pyfunction]
#[pyo3(signature = (url, *, synchronous=None, lock_patience_seconds=None, read_only=false, pool_size=None, connect_timeout_seconds=None, clock=None, policy=None, limits=None))]
#[allow(clippy::too_many_arguments)]
pub fn connect(
    py: Python<'_>,
    url: &Bound<'_, PyAny>,
    synchronous: Option<&Bound<'_, PyAny>>,
    lock_patience_seconds: Option<&Bound<'_, PyAny>>,
    read_only: bool,
    pool_size: Option<&Bound<'_, PyAny>>,
    connect_timeout_seconds: Option<&Bound<'_, PyAny>>,
    clock: Option<&Bound<'_, ManualClock>>,
    policy: Option<&Bound<'_, ChainPolicy>>,
    limits: Option<&Bound<'_, Limits>>,
) -> Result<Store> {
    let mut args = Args::new();
    // A path is a URL too, so any os.PathLike goes where a path goes.
    let url = match url.extract::<std::path::PathBuf>() {
        Ok(path) if !url.is_instance_of::<pyo3::types::PyString>() => match path.to_str() {
            Some(text) => text.to_owned(),
            None => {
                args.problem("url", "must be a path in UTF-8");
                String::new()
            }
        },
        _ => args.text("url", url),
    };
    let options = OpenArgs {
        synchronous,
        lock_patience_seconds,
        read_only,
        pool_size,
        connect_timeout_seconds,
    }
    .read(&mut args);
    args.finish()?;
    let store = py.detach(|| core::Store::connect_with(&url, &options))?;
    let shown = core::store::display_url(&url);
    let description = if read_only {
        format!("store {shown} (read-only)")
    } else {
        format!("store {shown}")
    };
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
    #[pyo3(signature = (task_id, goal=None, **kwargs))]
    fn create(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        goal: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Create>(py, given!(kwargs; task_id, goal))
    }

    /// Creates several handoffs in one transaction: all of them, or none when one is refused.
    /// Each item is a dict of `create()` keyword arguments.
    #[pyo3(signature = (records, **kwargs))]
    fn create_many(
        &self,
        py: Python<'_>,
        records: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Handoff>> {
        self.call::<ops::CreateMany>(py, given!(kwargs; records))
    }

    /// The handoff with this id; `NotFound` if there is none.
    #[pyo3(signature = (id, **kwargs))]
    fn get(&self, py: Python<'_>, id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Handoff> {
        self.call::<ops::Get>(py, given!(kwargs; id))
    }

    /// Handoffs matching every given filter, oldest first.
    #[pyo3(signature = (status=None, task_id=None, to_agent=None, limit=None, **kwargs))]
    fn list(
        &self,
        py: Python<'_>,
        status: Arg<'_>,
        task_id: Arg<'_>,
        to_agent: Arg<'_>,
        limit: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Handoff>> {
        self.call::<ops::List>(py, given!(kwargs; status, task_id, to_agent, limit))
    }

    /// Claims the handoff `id` for `agent`; `AlreadyClaimed` while another claim is live.
    #[pyo3(signature = (id, agent, lease_seconds=None, **kwargs))]
    fn claim(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        agent: Arg<'_>,
        lease_seconds: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Claim> {
        self.call::<ops::Claim>(py, given!(kwargs; id, agent, lease_seconds))
    }

    /// Claims the oldest pending handoff `agent` may take, optionally within `task_id`;
    /// `None` when there is nothing to claim, after waiting up to `wait_seconds` for some.
    #[pyo3(signature = (agent, task_id=None, lease_seconds=None, **kwargs))]
    fn claim_next(
        &self,
        py: Python<'_>,
        agent: Arg<'_>,
        task_id: Arg<'_>,
        lease_seconds: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Option<Claim>> {
        let store = self.store()?;
        let mut args = crate::ops::arguments::<ops::ClaimNext>(
            &store,
            given!(kwargs; agent, task_id, lease_seconds),
        )?;
        // The wait goes in slices with the GIL released, and Python's signal handlers run
        // between them: Ctrl-C ends a long wait instead of being noticed only after it.
        let wait = args
            .wait_seconds
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .unwrap_or_default();
        let deadline = Instant::now().checked_add(wait);
        loop {
            // No deadline: a wait too long to count is as good as endless.
            let left = deadline.map_or(Duration::MAX, |at| {
                at.saturating_duration_since(Instant::now())
            });
            let slice = left.min(WAIT_SLICE);
            args.wait_seconds = Some(slice.as_secs_f64());
            let this = args.clone();
            let claim = py.detach(|| ops::ClaimNext::run(&store, this))?;
            if claim.is_some() || left <= slice {
                return Ok(claim.to_python());
            }
            py.check_signals()?;
        }
    }

    /// Extends the claim's lease by its original length from now; `LeaseLost` if the claim is
    /// no longer current or its secret does not match. Takes a `Claim` or a `ClaimRef`.
    #[pyo3(signature = (claim, **kwargs))]
    fn heartbeat(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Heartbeat>(py, given!(kwargs; claim))
    }

    /// Gives the handoff back (pending again, one more attempt counted).
    #[pyo3(signature = (claim, reason, **kwargs))]
    fn release(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        reason: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Release>(py, given!(kwargs; claim, reason))
    }

    /// Reports that the work failed with `error`: pending again with one more attempt counted,
    /// or `failed` (the error its outcome) after the last of its `max_attempts`.
    #[pyo3(signature = (claim, error, **kwargs))]
    fn fail(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        error: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Fail>(py, given!(kwargs; claim, error))
    }

    /// Finishes the handoff with `outcome`.
    #[pyo3(signature = (claim, outcome=None, **kwargs))]
    fn complete(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        outcome: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Complete>(py, given!(kwargs; claim, outcome))
    }

    /// Refuses the handoff as `agent`, its addressee.
    #[pyo3(signature = (id, agent, reason, **kwargs))]
    fn reject(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        agent: Arg<'_>,
        reason: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Reject>(py, given!(kwargs; id, agent, reason))
    }

    /// Withdraws a pending or claimed handoff as `by`, its creator (`from_agent`), or anyone
    /// when it has none; `InvalidTransition` for anyone else. Its holder uses `cancel_claim`.
    #[pyo3(signature = (id, by, reason=None, **kwargs))]
    fn cancel(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        by: Arg<'_>,
        reason: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Cancel>(py, given!(kwargs; id, by, reason))
    }

    /// Withdraws the handoff as its holder, with its claim (a `Claim` or a `ClaimRef`).
    #[pyo3(signature = (claim, reason=None, **kwargs))]
    fn cancel_claim(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        reason: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::CancelClaim>(py, given!(kwargs; claim, reason))
    }

    /// Writes a portable backup of the whole store to `path` (a new file, readable by its
    /// owner only; an existing one is refused) while the store stays in use: any store
    /// restores it with `restore`.
    #[pyo3(signature = (path, **kwargs))]
    fn backup(&self, py: Python<'_>, path: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<()> {
        self.call::<ops::Backup>(py, given!(kwargs; path))
    }

    /// Restores the backup at `path` into this store, which must be empty; a damaged or
    /// foreign file is refused (`ValidationError` naming `path`) and nothing is written.
    #[pyo3(signature = (path, **kwargs))]
    fn restore(&self, py: Python<'_>, path: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<()> {
        self.call::<ops::Restore>(py, given!(kwargs; path))
    }

    /// Looks through the whole store for damage (files deleted, emptied or edited by hand,
    /// links planted, a bad disk) and names each piece; with `repair=True` a files store moves
    /// what is damaged into its `quarantine/` folder and mends what referred to it.
    #[pyo3(signature = (**kwargs))]
    fn check(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<CheckReport> {
        self.call::<ops::Check>(py, given!(kwargs;))
    }

    /// What this store can do beyond what every store does: whether it is durable, shared by
    /// processes or machines, writes backups, wakes waiting workers.
    #[pyo3(signature = (**kwargs))]
    fn capabilities(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Capabilities> {
        self.call::<ops::Capabilities>(py, given!(kwargs;))
    }

    /// Applies every time-driven change that is due (lapsed leases, expiry); returns how many
    /// handoffs changed.
    #[pyo3(signature = (**kwargs))]
    fn reap(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<usize> {
        self.call::<ops::Reap>(py, given!(kwargs;))
    }

    /// The event log, oldest first: of one handoff (`id`, or `handoff_id`) or one task
    /// (`task_id`), or all of it. Read a large log in pages: `after` is the `seq` of the last
    /// event already read, `limit` the most events to return. Every text an event carries (a
    /// reason, an outcome, an error, the addressee) is redacted, as the CLI shows it, unless
    /// `redact=False` (the owner's opt-out).
    #[pyo3(signature = (id=None, task_id=None, after=None, limit=None, *, redact=true, **kwargs))]
    #[allow(clippy::too_many_arguments)] // the operation's arguments, and the face's `redact`
    fn events(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        task_id: Arg<'_>,
        after: Arg<'_>,
        limit: Arg<'_>,
        redact: bool,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Event>> {
        let store = self.store()?;
        let given = given!(kwargs; id, task_id, after, limit);
        let events = crate::ops::call::<ops::Events>(py, &store, given)?;
        Ok(match redact {
            true => events.into_iter().map(Event::redacted).collect(),
            false => events.into_iter().map(Event::new).collect(),
        })
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
    #[pyo3(signature = (task_id, **kwargs))]
    fn chain(&self, py: Python<'_>, task_id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Chain> {
        self.call::<ops::Chain>(py, given!(kwargs; task_id))
    }

    /// Saves `agent`'s progress on `task_id` without changing who owns what. Takes the same
    /// field arguments as `create` (except the ones a checkpoint fixes: from/to agent, kind).
    #[pyo3(signature = (task_id, agent, **kwargs))]
    fn checkpoint(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        agent: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Checkpoint>(py, given!(kwargs; task_id, agent))
    }

    /// Ids of tasks in progress whose last sign of life (claim, heartbeat, checkpoint) is
    /// older than `older_than_seconds`.
    #[pyo3(signature = (older_than_seconds, **kwargs))]
    fn stalled(
        &self,
        py: Python<'_>,
        older_than_seconds: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<String>> {
        self.call::<ops::Stalled>(py, given!(kwargs; older_than_seconds))
    }

    /// Per from→to pair of agents: totals, outcomes and median times to claim and complete.
    #[pyo3(signature = (**kwargs))]
    fn stats(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Vec<PathStats>> {
        self.call::<ops::Stats>(py, given!(kwargs;))
    }

    /// The queue at a glance: how many handoffs are in each status, per addressee.
    #[pyo3(signature = (**kwargs))]
    fn queue_counts(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Vec<QueueCount>> {
        self.call::<ops::QueueCounts>(py, given!(kwargs;))
    }

    /// Creates a task (status `pending`) with its plan, checked whole: every problem at once,
    /// nothing written when there is one. `goal` defaults to the name; `id` is the caller's
    /// own; each of `objectives` becomes a step `"1"`, `"2"`, ... offered to the members.
    #[pyo3(signature = (name, goal=None, steps=None, **kwargs))]
    fn create_task(
        &self,
        py: Python<'_>,
        name: Arg<'_>,
        goal: Arg<'_>,
        steps: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::CreateTask>(py, given!(kwargs; name, goal, steps))
    }

    /// Starts a pending task: the steps that wait for nothing are offered as handoffs.
    #[pyo3(signature = (id, **kwargs))]
    fn start_task(&self, py: Python<'_>, id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Task> {
        self.call::<ops::StartTask>(py, given!(kwargs; id))
    }

    /// The task with this id, with its plan; `NotFound` if there is none.
    #[pyo3(signature = (id, **kwargs))]
    fn get_task(&self, py: Python<'_>, id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Task> {
        self.call::<ops::GetTask>(py, given!(kwargs; id))
    }

    /// Task summaries, oldest first, a page at a time.
    #[pyo3(signature = (status=None, limit=None, **kwargs))]
    fn list_tasks(
        &self,
        py: Python<'_>,
        status: Arg<'_>,
        limit: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<TaskSummary>> {
        self.call::<ops::ListTasks>(py, given!(kwargs; status, limit))
    }

    /// Changes a task if it is still at `expected_version` (compare-and-swap).
    #[pyo3(signature = (id, expected_version, **kwargs))]
    fn update_task(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        expected_version: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::UpdateTask>(py, given!(kwargs; id, expected_version))
    }

    /// Pauses a task: its offers nobody holds are withdrawn; no step is offered until it
    /// resumes.
    #[pyo3(signature = (id, **kwargs))]
    fn pause_task(&self, py: Python<'_>, id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Task> {
        self.call::<ops::PauseTask>(py, given!(kwargs; id))
    }

    /// Resumes a paused task.
    #[pyo3(signature = (id, **kwargs))]
    fn resume_task(&self, py: Python<'_>, id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Task> {
        self.call::<ops::ResumeTask>(py, given!(kwargs; id))
    }

    /// Cancels a task; steps already claimed may finish.
    #[pyo3(signature = (id, reason=None, **kwargs))]
    fn cancel_task(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        reason: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::CancelTask>(py, given!(kwargs; id, reason))
    }

    /// `agent` joins a task, with an optional `role`; the steps named in `objectives` (ids or
    /// numbers) are assigned to it.
    #[pyo3(signature = (id, agent, **kwargs))]
    fn join_task(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        agent: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::JoinTask>(py, given!(kwargs; id, agent))
    }

    /// Runs a task again: a new pending task with the plan of `task_id` (or of the task
    /// `bundle_id=` was made from), other `agents=`, `instructions=` or `context=` where given,
    /// seeded with the earlier run's verified knowledge.
    #[pyo3(signature = (task_id = None, **kwargs))]
    fn rerun_task(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::RerunTask>(py, given!(kwargs; task_id))
    }

    /// Completes a task on its caller's word, with `result_summary`; with `merge_to_main`, its
    /// verified knowledge reaches `main`.
    #[pyo3(signature = (id, result_summary=None, merge_to_main=None, **kwargs))]
    fn complete_task(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        result_summary: Arg<'_>,
        merge_to_main: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::CompleteTask>(py, given!(kwargs; id, result_summary, merge_to_main))
    }

    /// Fails a task for `reason` (required: an empty one is a `ValidationError`).
    #[pyo3(signature = (id, reason=None, **kwargs))]
    fn fail_task(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        reason: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::FailTask>(py, given!(kwargs; id, reason))
    }

    /// The holder of a step hands it on, with its claim, as an escalation to `to_agent`.
    #[pyo3(signature = (claim, to_agent, **kwargs))]
    fn escalate_step(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        to_agent: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::EscalateStep>(py, given!(kwargs; claim, to_agent))
    }

    /// Reports that a step's work failed, with its claim.
    #[pyo3(signature = (claim, error, **kwargs))]
    fn fail_step(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        error: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::FailStep>(py, given!(kwargs; claim, error))
    }

    /// A human's answer to an escalated step, with the escalation's claim.
    #[pyo3(signature = (claim, resolution, retry=None, **kwargs))]
    fn resolve_escalation(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        resolution: Arg<'_>,
        retry: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Task> {
        self.call::<ops::ResolveEscalation>(py, given!(kwargs; claim, resolution, retry))
    }

    /// The task's log, oldest first.
    #[pyo3(signature = (id, **kwargs))]
    fn task_events(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<TaskEvent>> {
        self.call::<ops::TaskEvents>(py, given!(kwargs; id))
    }

    /// Finished tasks, newest first, in the seed's `task-history.json` form.
    #[pyo3(signature = (limit=None, **kwargs))]
    fn task_history(
        &self,
        py: Python<'_>,
        limit: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<HistoryEntry>> {
        self.call::<ops::TaskHistory>(py, given!(kwargs; limit))
    }

    /// Statistics over every finished task.
    #[pyo3(signature = (**kwargs))]
    fn task_statistics(
        &self,
        py: Python<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<TaskStatistics> {
        self.call::<ops::TaskStatistics>(py, given!(kwargs; ))
    }

    /// Summarises old finished tasks (beyond the newest `keep_last`, default 100, or older
    /// than `keep_details_days`, default 30): only their history entries stay.
    #[pyo3(signature = (keep_last=None, keep_details_days=None, **kwargs))]
    fn prune(
        &self,
        py: Python<'_>,
        keep_last: Arg<'_>,
        keep_details_days: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<usize> {
        self.call::<ops::Prune>(py, given!(kwargs; keep_last, keep_details_days))
    }

    /// The memory of `scope`, `None` when nothing was written there.
    #[pyo3(signature = (scope, **kwargs))]
    fn memory_get(
        &self,
        py: Python<'_>,
        scope: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Option<Memory>> {
        self.call::<ops::MemoryGet>(py, given!(kwargs; scope))
    }

    /// Writes the memory of `scope`, with `expected_version` only if it is still at it.
    #[pyo3(signature = (scope, value, expected_version=None, **kwargs))]
    fn memory_put(
        &self,
        py: Python<'_>,
        scope: Arg<'_>,
        value: Arg<'_>,
        expected_version: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Memory> {
        self.call::<ops::MemoryPut>(py, given!(kwargs; scope, value, expected_version))
    }

    /// Every scope's memory whose scope starts with `prefix`, in scope order.
    #[pyo3(signature = (prefix=None, **kwargs))]
    fn memory_list(
        &self,
        py: Python<'_>,
        prefix: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Memory>> {
        self.call::<ops::MemoryList>(py, given!(kwargs; prefix))
    }

    /// Forgets the memory of `scope`; whether there was anything to forget.
    #[pyo3(signature = (scope, expected_version=None, **kwargs))]
    fn memory_delete(
        &self,
        py: Python<'_>,
        scope: Arg<'_>,
        expected_version: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<bool> {
        self.call::<ops::MemoryDelete>(py, given!(kwargs; scope, expected_version))
    }

    /// Who owns the conversation `session_id` now, and its hops.
    #[pyo3(signature = (session_id, **kwargs))]
    fn session(
        &self,
        py: Python<'_>,
        session_id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Session> {
        self.call::<ops::Session>(py, given!(kwargs; session_id))
    }

    /// Starts a manager/worker run on a task: the initialization goes to the worker.
    #[pyo3(signature = (task_id, **kwargs))]
    fn initialize(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Initialize>(py, given!(kwargs; task_id))
    }

    /// The worker's report on the instructions it holds, with their claim.
    #[pyo3(signature = (claim, status, **kwargs))]
    fn report(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        status: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Report>(py, given!(kwargs; claim, status))
    }

    /// The manager's decision on the report it holds, with its claim.
    #[pyo3(signature = (claim, decision, **kwargs))]
    fn decide(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        decision: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Option<Handoff>> {
        self.call::<ops::Decide>(py, given!(kwargs; claim, decision))
    }

    /// The worker's error report on the instructions it holds, with their claim.
    #[pyo3(signature = (claim, error_type, severity, description, **kwargs))]
    fn report_error(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        error_type: Arg<'_>,
        severity: Arg<'_>,
        description: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::ReportError>(py, given!(kwargs; claim, error_type, severity, description))
    }

    /// The manager's recovery steps for the error report it holds, with its claim.
    #[pyo3(signature = (claim, strategy, steps, **kwargs))]
    fn recover(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        strategy: Arg<'_>,
        steps: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Recover>(py, given!(kwargs; claim, strategy, steps))
    }

    /// The manager hands the run to a human, with the claim of what it holds.
    #[pyo3(signature = (
        claim, category, severity, urgency, blocker_type, description, impact, recommendation,
        **kwargs
    ))]
    #[allow(clippy::too_many_arguments)] // The seed's escalation, field by field.
    fn escalate(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        category: Arg<'_>,
        severity: Arg<'_>,
        urgency: Arg<'_>,
        blocker_type: Arg<'_>,
        description: Arg<'_>,
        impact: Arg<'_>,
        recommendation: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Escalate>(
            py,
            given!(kwargs; claim, category, severity, urgency, blocker_type, description,
                   impact, recommendation),
        )
    }

    /// A human's answer to the escalation they hold, with its claim.
    #[pyo3(signature = (claim, resolution, **kwargs))]
    fn resolve(
        &self,
        py: Python<'_>,
        claim: Arg<'_>,
        resolution: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Handoff> {
        self.call::<ops::Resolve>(py, given!(kwargs; claim, resolution))
    }

    /// A task's manager/worker run as it stands.
    #[pyo3(signature = (task_id, **kwargs))]
    fn protocol_run(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<ProtocolRun> {
        self.call::<ops::ProtocolRun>(py, given!(kwargs; task_id))
    }

    /// The messages of a task's run, oldest first.
    #[pyo3(signature = (task_id, **kwargs))]
    fn protocol_history(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Handoff>> {
        self.call::<ops::ProtocolHistory>(py, given!(kwargs; task_id))
    }

    /// How the store's protocol runs went.
    #[pyo3(signature = (**kwargs))]
    fn protocol_stats(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<ProtocolStats> {
        self.call::<ops::ProtocolStats>(py, given!(kwargs;))
    }

    /// Writes a conversation on a branch, its messages numbered from 1 (in any provider's
    /// message shape).
    #[pyo3(signature = (branch, messages, **kwargs))]
    fn add_conversation(
        &self,
        py: Python<'_>,
        branch: Arg<'_>,
        messages: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Conversation> {
        self.call::<ops::AddConversation>(py, given!(kwargs; branch, messages))
    }

    /// Adds messages at the end of a conversation.
    #[pyo3(signature = (conversation_id, messages, **kwargs))]
    fn append_messages(
        &self,
        py: Python<'_>,
        conversation_id: Arg<'_>,
        messages: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Conversation> {
        self.call::<ops::AppendMessages>(py, given!(kwargs; conversation_id, messages))
    }

    /// The conversation with this id.
    #[pyo3(signature = (id, **kwargs))]
    fn get_conversation(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Conversation> {
        self.call::<ops::GetConversation>(py, given!(kwargs; id))
    }

    /// A conversation's messages, each with its `seq` and where it was cherry-picked to.
    #[pyo3(signature = (id, **kwargs))]
    fn messages(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Py<PyAny>>> {
        self.call::<ops::Messages>(py, given!(kwargs; id))
    }

    /// The conversations of a branch, of a task, or of the store.
    #[pyo3(signature = (**kwargs))]
    fn list_conversations(
        &self,
        py: Python<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Conversation>> {
        self.call::<ops::ListConversations>(py, given!(kwargs;))
    }

    /// Copies a conversation's messages (a range, or all of it) into a new conversation; with
    /// `verify=True` (the default when a `verifier` is given), `verifier(item)` scores the pick
    /// before it is written. When the verifier raises, nothing is written and the exception
    /// propagates as it is.
    #[pyo3(signature = (conversation_id, target_branch, verifier = None, **kwargs))]
    fn cherry_pick(
        &self,
        py: Python<'_>,
        conversation_id: Arg<'_>,
        target_branch: Arg<'_>,
        verifier: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Conversation> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::CherryPick>(
            &store,
            given!(kwargs; conversation_id, target_branch),
        )?;
        let Some(verifier) = verifier.filter(|v| !v.is_none()) else {
            return Ok(Conversation::new(
                py.detach(|| ops::CherryPick::run_with(&store, args, None))?,
            ));
        };
        let name = crate::curation::callable_name(verifier);
        let verifier = verifier.clone().unbind();
        let depth = store.limits().max_depth;
        let mut raised = None;
        let picked = py.detach(|| {
            let mut verifier = ops::JsonVerifier::new(name, |item: Value| {
                crate::curation::call_json(&verifier, &item, "verifier", depth, &mut raised)
            });
            ops::CherryPick::run_with(&store, args, Some(&mut verifier))
        });
        match (picked, raised) {
            (Err(_), Some(exception)) => Err(exception.into()),
            (picked, _) => Ok(Conversation::new(picked?)),
        }
    }

    /// Draws facts from a conversation and writes them on `target_branch` as candidates
    /// (`active`): by `extractor(conversation) -> list` (texts or `{"text", "confidence",
    /// "source"}` dicts), or without one by the heuristics. When the extractor raises,
    /// nothing is written and the exception propagates as it is.
    #[pyo3(signature = (conversation_id, target_branch, extractor = None, **kwargs))]
    fn cherry_pick_to_facts(
        &self,
        py: Python<'_>,
        conversation_id: Arg<'_>,
        target_branch: Arg<'_>,
        extractor: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Fact>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::CherryPickToFacts>(
            &store,
            given!(kwargs; conversation_id, target_branch),
        )?;
        let Some(extractor) = extractor.filter(|e| !e.is_none()) else {
            let facts = py.detach(|| ops::CherryPickToFacts::run_with(&store, args, None))?;
            return Ok(facts.into_iter().map(Fact::new).collect());
        };
        let name = crate::curation::callable_name(extractor);
        let extractor = extractor.clone().unbind();
        let depth = store.limits().max_depth;
        let mut raised = None;
        let drawn = py.detach(|| {
            let mut extractor = ops::JsonExtractor::new(name, |item: Value| {
                crate::curation::call_json(&extractor, &item, "extractor", depth, &mut raised)
            });
            ops::CherryPickToFacts::run_with(&store, args, Some(&mut extractor))
        });
        match (drawn, raised) {
            (Err(_), Some(exception)) => Err(exception.into()),
            (drawn, _) => Ok(drawn?.into_iter().map(Fact::new).collect()),
        }
    }

    /// Copies a conversation's decision points (the seed's heuristics, or `judge(message) ->
    /// bool`) into a new conversation. When the judge raises, nothing is written and the
    /// exception propagates as it is.
    #[pyo3(signature = (conversation_id, target_branch, judge = None, **kwargs))]
    fn cherry_pick_decisions(
        &self,
        py: Python<'_>,
        conversation_id: Arg<'_>,
        target_branch: Arg<'_>,
        judge: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Conversation> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::CherryPickDecisions>(
            &store,
            given!(kwargs; conversation_id, target_branch),
        )?;
        let Some(judge) = judge else {
            return Ok(Conversation::new(py.detach(|| {
                ops::CherryPickDecisions::run_with(&store, args, None)
            })?));
        };
        let judge = judge.clone().unbind();
        let depth = store.limits().max_depth;
        let mut raised = None;
        let picked = py.detach(|| {
            let mut judge = ops::JsonJudge(|message: Value| {
                crate::curation::call_json(&judge, &message, "judge", depth, &mut raised)
            });
            ops::CherryPickDecisions::run_with(&store, args, Some(&mut judge))
        });
        match (picked, raised) {
            (Err(_), Some(exception)) => Err(exception.into()),
            (picked, _) => Ok(Conversation::new(picked?)),
        }
    }

    /// Copies a conversation's tool-call sequences into a new conversation.
    #[pyo3(signature = (conversation_id, target_branch, **kwargs))]
    fn cherry_pick_tools(
        &self,
        py: Python<'_>,
        conversation_id: Arg<'_>,
        target_branch: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Conversation> {
        self.call::<ops::CherryPickTools>(py, given!(kwargs; conversation_id, target_branch))
    }

    /// Writes facts on a branch (status `active`).
    #[pyo3(signature = (branch, facts, **kwargs))]
    fn add_facts(
        &self,
        py: Python<'_>,
        branch: Arg<'_>,
        facts: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Fact>> {
        self.call::<ops::AddFacts>(py, given!(kwargs; branch, facts))
    }

    /// The facts of a branch, oldest first.
    #[pyo3(signature = (branch, **kwargs))]
    fn facts(
        &self,
        py: Python<'_>,
        branch: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Fact>> {
        self.call::<ops::Facts>(py, given!(kwargs; branch))
    }

    /// Every branch that holds something, with its parent.
    #[pyo3(signature = (**kwargs))]
    fn branches(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Vec<Py<PyAny>>> {
        self.call::<ops::Branches>(py, given!(kwargs;))
    }

    /// Scores a branch's facts and conversations with `verifier(item)` (without one, the
    /// neutral 0.5) and stores the verdicts. An item the verifier raises on, or scores with NaN
    /// or outside 0..1, is left as it was and reported.
    #[pyo3(signature = (branch, verifier = None, **kwargs))]
    fn verify(
        &self,
        py: Python<'_>,
        branch: Arg<'_>,
        verifier: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<VerifyReport> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::Verify>(&store, given!(kwargs; branch))?;
        let Some(verifier) = verifier else {
            return Ok(VerifyReport::new(
                py.detach(|| ops::Verify::run_with(&store, args, None))?,
            ));
        };
        let name = crate::curation::callable_name(verifier);
        let verifier = verifier.clone().unbind();
        let depth = store.limits().max_depth;
        let report = py.detach(|| {
            // An exception fails only its item: the report says which, and why.
            let mut raised = None;
            let mut verifier = ops::JsonVerifier::new(name, |item: Value| {
                crate::curation::call_json(&verifier, &item, "verifier", depth, &mut raised)
            });
            ops::Verify::run_with(&store, args, Some(&mut verifier))
        })?;
        Ok(VerifyReport::new(report))
    }

    /// Moves a branch's verified knowledge into its parent (or `into`).
    #[pyo3(signature = (branch, **kwargs))]
    fn merge(
        &self,
        py: Python<'_>,
        branch: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<MergeReport> {
        self.call::<ops::Merge>(py, given!(kwargs; branch))
    }

    /// The successor's packet for a handoff, from every part of the store, within
    /// `budget_tokens` or `budget_chars`; `transcript` (messages in any provider's shape, as
    /// dicts or objects with `model_dump()`) is one more conversation in it, and
    /// `summarize(request) -> str` compresses what does not fit whole instead of cutting it
    /// (an exception or an answer that is no `str`: the item is cut).
    #[pyo3(signature = (handoff_id, *, transcript = None, summarize = None, **kwargs))]
    fn context_for(
        &self,
        py: Python<'_>,
        handoff_id: Arg<'_>,
        transcript: Arg<'_>,
        summarize: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Packet> {
        let plain = transcript.map(crate::context::transcript).transpose()?;
        let transcript = plain.as_ref();
        let summarize = summarize.filter(|s| !s.is_none());
        let Some(summarize) = summarize else {
            return self.call::<ops::ContextFor>(py, given!(kwargs; handoff_id, transcript));
        };
        if !summarize.is_callable() {
            return Err(core::Error::invalid("summarize", "must be callable").into());
        }
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::ContextFor>(
            &store,
            given!(kwargs; handoff_id, transcript),
        )?;
        let (summarizer, interrupted) = crate::context::Summarizer::new(summarize);
        let packet = py.detach(|| {
            let options = args.options()?.summarizer(summarizer);
            store.context_for(&args.handoff_id, options)
        });
        let interrupted = interrupted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(err) = interrupted {
            return Err(err.into());
        }
        Ok(Packet::new(packet?))
    }

    /// The curation log of a task, or of `main`.
    #[pyo3(signature = (**kwargs))]
    fn curation_events(
        &self,
        py: Python<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<Py<PyAny>>> {
        self.call::<ops::CurationEvents>(py, given!(kwargs;))
    }

    /// Packages a task's (or a branch's) knowledge as a bundle with a share token.
    #[pyo3(signature = (name, **kwargs))]
    fn create_bundle(
        &self,
        py: Python<'_>,
        name: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Bundle> {
        self.call::<ops::CreateBundle>(py, given!(kwargs; name))
    }

    /// The bundle with this id.
    #[pyo3(signature = (id, **kwargs))]
    fn get_bundle(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Bundle> {
        self.call::<ops::GetBundle>(py, given!(kwargs; id))
    }

    /// The store's bundles, oldest first.
    #[pyo3(signature = (**kwargs))]
    fn list_bundles(&self, py: Python<'_>, kwargs: Option<Kwargs<'_>>) -> Result<Vec<Bundle>> {
        self.call::<ops::ListBundles>(py, given!(kwargs;))
    }

    /// The bundle a share token opens (never a private one).
    #[pyo3(signature = (token, **kwargs))]
    fn bundle_by_token(
        &self,
        py: Python<'_>,
        token: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Bundle> {
        self.call::<ops::BundleByToken>(py, given!(kwargs; token))
    }

    /// Changes who may find a bundle by its token.
    #[pyo3(signature = (id, visibility, **kwargs))]
    fn set_visibility(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        visibility: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Bundle> {
        self.call::<ops::SetVisibility>(py, given!(kwargs; id, visibility))
    }

    /// Signs a bundle with a secret key (`secret_key=`, from `generate_bundle_key()`): a store
    /// that trusts its public key imports the bundle's verdicts as verified.
    #[pyo3(signature = (id, **kwargs))]
    fn sign_bundle(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Bundle> {
        self.call::<ops::SignBundle>(py, given!(kwargs; id))
    }

    /// Trusts public keys to vouch for bundles (`trust=`), or stops trusting them
    /// (`distrust=`); the keys trusted afterwards.
    #[pyo3(signature = (**kwargs))]
    fn trust_bundle_keys(
        &self,
        py: Python<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Vec<TrustedKey>> {
        self.call::<ops::TrustBundleKeys>(py, given!(kwargs;))
    }

    /// Deletes a bundle and its share token.
    #[pyo3(signature = (id, **kwargs))]
    fn delete_bundle(&self, py: Python<'_>, id: Arg<'_>, kwargs: Option<Kwargs<'_>>) -> Result<()> {
        self.call::<ops::DeleteBundle>(py, given!(kwargs; id))
    }

    /// Imports a bundle (its JSON as `str` or `bytes`, a `dict`, or a `Bundle`; or
    /// `bundle_id=` or `share_token=` of this store's) into a branch, checked whole first;
    /// importing it again adds nothing.
    #[pyo3(signature = (bundle = None, **kwargs))]
    fn import_bundle(
        &self,
        py: Python<'_>,
        bundle: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<ImportReport> {
        // A `Bundle` goes as its portable form, bytes as the text they hold.
        let text = match bundle {
            Some(b) => match (b.cast::<Bundle>(), b.cast::<pyo3::types::PyBytes>()) {
                (Ok(made), _) => Some(made.get().portable()?),
                (_, Ok(bytes)) => Some(
                    String::from_utf8(bytes.as_bytes().to_vec())
                        .map_err(|_| core::Error::invalid("bundle", "must be UTF-8 text"))?,
                ),
                _ => None,
            },
            None => None,
        };
        let text = text.map(|t| pyo3::types::PyString::new(py, &t).into_any());
        let bundle = text.as_ref().or(bundle);
        self.call::<ops::ImportBundle>(py, given!(kwargs; bundle))
    }

    /// Runs the verification gate on a bundle's contents: `verifier(item)` scores each of its
    /// facts and conversations, and the bundle records its status, mean score and verifier.
    /// Without a verifier it is refused (`ValidationError` naming `verifier`); when the
    /// verifier raises, nothing is recorded and the exception propagates as it is.
    #[pyo3(signature = (id, verifier = None, **kwargs))]
    fn verify_bundle(
        &self,
        py: Python<'_>,
        id: Arg<'_>,
        verifier: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<Bundle> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::VerifyBundle>(&store, given!(kwargs; id))?;
        let Some(verifier) = verifier.filter(|v| !v.is_none()) else {
            return Ok(Bundle::new(
                py.detach(|| ops::VerifyBundle::run_with(&store, args, None))?,
            ));
        };
        let name = crate::curation::callable_name(verifier);
        let verifier = verifier.clone().unbind();
        let depth = store.limits().max_depth;
        let mut raised = None;
        let verified = py.detach(|| {
            let mut verifier = ops::JsonVerifier::new(name, |item: Value| {
                crate::curation::call_json(&verifier, &item, "verifier", depth, &mut raised)
            });
            ops::VerifyBundle::run_with(&store, args, Some(&mut verifier))
        });
        match (verified, raised) {
            (Err(_), Some(exception)) => Err(exception.into()),
            (verified, _) => Ok(Bundle::new(verified?)),
        }
    }

    /// A task's whole run as one timeline, with its agents, key knowledge and outcome.
    #[pyo3(signature = (task_id, **kwargs))]
    fn replay(
        &self,
        py: Python<'_>,
        task_id: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<TaskReplay> {
        self.call::<ops::Replay>(py, given!(kwargs; task_id))
    }

    /// Two runs side by side.
    #[pyo3(signature = (task_a, task_b, **kwargs))]
    fn compare(
        &self,
        py: Python<'_>,
        task_a: Arg<'_>,
        task_b: Arg<'_>,
        kwargs: Option<Kwargs<'_>>,
    ) -> Result<TaskComparison> {
        self.call::<ops::Compare>(py, given!(kwargs; task_a, task_b))
    }

    /// Holds `claim` while its work runs: `with store.lease(claim) as lease:` heartbeats every
    /// third of its lease from a thread of its own, and leaving the block completes the claim
    /// (with `lease.outcome`) or fails it with the exception that ended it.
    fn lease(&self, py: Python<'_>, claim: &Bound<'_, PyAny>) -> Result<crate::lease::Lease> {
        let store = self.store()?;
        let claim = Some(claim);
        let args = crate::ops::arguments::<ops::Heartbeat>(&store, given!(None; claim))?;
        let claim = args.claim.into_ref()?;
        Ok(crate::lease::Lease::new(py.detach(|| store.lease(claim))?))
    }

    /// Reads the memory of `scope` (`{}` when none), calls `change` with it and writes what it
    /// returns, if nobody wrote meanwhile; otherwise reads and calls it again. When `change`
    /// raises, nothing is written and the exception propagates as it is.
    fn memory_update(
        &self,
        py: Python<'_>,
        scope: &str,
        change: &Bound<'_, PyAny>,
    ) -> Result<Memory> {
        let store = self.store()?;
        let change = change.clone().unbind();
        let max_depth = store.limits().max_depth;
        let memory = py.detach(|| {
            store.memory_update(scope, |value| -> Result<core::Metadata> {
                Python::attach(|py| {
                    let current = crate::convert::object_to_py(py, &value)?;
                    let changed = change.bind(py).call1((current,))?;
                    let mut convert = crate::convert::ToJson::untyped(max_depth);
                    let json = convert.json("value", &changed);
                    let problems = convert.into_problems();
                    match json {
                        _ if !problems.is_empty() => {
                            Err(core::Error::Validation { problems }.into())
                        }
                        serde_json::Value::Object(map) => Ok(map),
                        _ => Err(core::Error::invalid("value", "must be a dict").into()),
                    }
                })
            })
        })?;
        Ok(Memory::new(memory))
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
