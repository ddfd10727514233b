//! `handoff_core.Store`, `Claim`, `open` and `connect`: the core's `Store`, with every call
//! that touches the backend run with the GIL released. The store's operations are Python
//! methods generated from the catalog (`handoff_core._store`) that call `_call` here; only
//! an operation with something Python-specific (a callable, a wait in slices, redaction) has
//! a private method of its own.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::DEFAULT_LEASE;
use handoff_core::ops::{self, Operation};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyTuple};
use serde_json::{Value, json};

use crate::bundles::Bundle;
use crate::chain::ChainPolicy;
use crate::clock::ManualClock;
use crate::convert::{Args, py_repr, seconds};
use crate::errors::{Failure, Result};
use crate::machine::Event;
use crate::ops::{Given, Kwargs, Made, given, to_python};
use crate::record::Handoff;
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

/// Reads the options of `open` and `connect` that say how a store is opened as the core
/// describes them once (`ConnectArgs`, from JSON as an operation's arguments), each bad one
/// by its name among the problems of `args` (the path's or URL's), so that every problem is
/// reported at once.
fn connect_args(args: &mut Args, operation: &str, given: Given<'_>) -> Result<ops::ConnectArgs> {
    match crate::ops::read::<ops::ConnectArgs>(operation, given) {
        Ok(options) => Ok(options),
        Err(Failure::Core(err)) => {
            args.core_problems("options", err);
            Ok(ops::ConnectArgs::default())
        }
        Err(err) => Err(err),
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
    // `read_only` goes as the bool pyo3 read, beside the options given as they came.
    let flag = PyBool::new(py, read_only).to_owned().into_any();
    let read_only = Some(&flag);
    let options = connect_args(
        &mut args,
        "open",
        given!(None; synchronous, lock_patience_seconds, read_only),
    )?;
    args.finish()?;
    // By path, not through `connect`: any path is a file name here (`memory:x`, `files:y`, one
    // that is not UTF-8), where `connect` would read some of them as URLs.
    let path = path.unwrap_or_default();
    let sqlite = options.sqlite();
    let read_only = options.read_only;
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
    let flag = PyBool::new(py, read_only).to_owned().into_any();
    let read_only = Some(&flag);
    let options = connect_args(
        &mut args,
        "connect",
        given!(None; synchronous, lock_patience_seconds, read_only, pool_size,
               connect_timeout_seconds),
    )?
    .options();
    args.finish()?;
    let read_only = options.read_only;
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

    /// Runs the operation named `operation` with its `arguments` by name, as every generated
    /// method does (`handoff_core._store`): the core's list of operations is the table, so an
    /// operation the core adds needs no method here.
    #[pyo3(name = "_call")]
    fn call_operation(
        &self,
        py: Python<'_>,
        operation: &str,
        arguments: Kwargs<'_>,
    ) -> Result<Py<PyAny>> {
        let run = crate::ops::runner(operation).ok_or_else(|| {
            PyValueError::new_err(format!("the core has no operation named {operation:?}"))
        })?;
        run(py, &self.store()?, Given::all(arguments))
    }

    /// `claim_next`, its wait in slices with the GIL released (the core's
    /// `claim_next_waiting`): between them, Python's signal handlers run, so Ctrl-C ends a long
    /// wait instead of being noticed only after it, and `stop` (`hc.aio`: the awaiting task was
    /// cancelled) ends it when it says so.
    #[pyo3(name = "_claim_next", signature = (arguments, stop=None))]
    fn claim_next(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::ClaimNext>(&store, Given::all(arguments))?;
        let stop = stop.filter(|s| !s.is_none()).map(|s| s.clone().unbind());
        // What a signal handler (or `stop`) raised: it ends the wait and is raised after it.
        let mut raised = None;
        let claim = py.detach(|| {
            let mut stopped = || {
                Python::attach(|py| {
                    let asked = py.check_signals().and_then(|()| match &stop {
                        Some(stop) => stop.bind(py).call0()?.is_truthy(),
                        None => Ok(false),
                    });
                    asked.unwrap_or_else(|err| {
                        raised = Some(err);
                        true
                    })
                })
            };
            store.claim_next_waiting(args, WAIT_SLICE, &mut stopped)
        });
        // `stop` is asked only after a slice that claimed nothing: nothing to give back here.
        if let Some(err) = raised {
            return Err(err.into());
        }
        Ok(to_python(py, claim?)?)
    }

    /// Gives back a claim whose caller left before it received it (`hc.aio`: the awaiting
    /// task was cancelled), so that the work is claimable again at once.
    #[pyo3(name = "_give_back")]
    fn give_back(&self, py: Python<'_>, claim: &Bound<'_, PyAny>) -> Result<()> {
        let store = self.store()?;
        let claim = claim_ref(&store, claim)?;
        py.detach(|| store.give_back(claim))?;
        Ok(())
    }

    /// `events`, each event's texts redacted unless `redact` is false (the owner's opt-out).
    #[pyo3(name = "_events")]
    fn events(&self, py: Python<'_>, arguments: Kwargs<'_>, redact: bool) -> Result<Vec<Event>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::Events>(&store, Given::all(arguments))?;
        let events = py.detach(|| ops::Events::run(&store, args))?;
        Ok(match redact {
            true => events.into_iter().map(Event::redacted).collect(),
            false => events.into_iter().map(Event::new).collect(),
        })
    }

    /// `cherry_pick`, its pick scored by `verifier` before it is written.
    #[pyo3(name = "_cherry_pick")]
    fn cherry_pick(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        verifier: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::CherryPick>(&store, Given::all(arguments))?;
        let verifier = verifier.filter(|v| !v.is_none());
        with_callable(py, &store, verifier, "verifier", |call| match call {
            None => ops::CherryPick::run_with(&store, args, None),
            Some((name, call)) => {
                let mut verifier = ops::JsonVerifier::new(name, call);
                ops::CherryPick::run_with(&store, args, Some(&mut verifier))
            }
        })
    }

    /// `cherry_pick_to_facts`, the facts drawn by `extractor`.
    #[pyo3(name = "_cherry_pick_to_facts")]
    fn cherry_pick_to_facts(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        extractor: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::CherryPickToFacts>(&store, Given::all(arguments))?;
        let extractor = extractor.filter(|e| !e.is_none());
        with_callable(py, &store, extractor, "extractor", |call| match call {
            None => ops::CherryPickToFacts::run_with(&store, args, None),
            Some((name, call)) => {
                let mut extractor = ops::JsonExtractor::new(name, call);
                ops::CherryPickToFacts::run_with(&store, args, Some(&mut extractor))
            }
        })
    }

    /// `cherry_pick_decisions`, each message decided by `judge`.
    #[pyo3(name = "_cherry_pick_decisions")]
    fn cherry_pick_decisions(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        judge: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let store = self.store()?;
        let args =
            crate::ops::arguments::<ops::CherryPickDecisions>(&store, Given::all(arguments))?;
        with_callable(py, &store, judge, "judge", |call| match call {
            None => ops::CherryPickDecisions::run_with(&store, args, None),
            Some((_, call)) => {
                let mut judge = ops::JsonJudge(call);
                ops::CherryPickDecisions::run_with(&store, args, Some(&mut judge))
            }
        })
    }

    /// `verify`, each item scored by `verifier`. An exception fails only its item: the report
    /// says which, and why (the core reports no failure, so nothing is raised again).
    #[pyo3(name = "_verify")]
    fn verify(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        verifier: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::Verify>(&store, Given::all(arguments))?;
        with_callable(py, &store, verifier, "verifier", |call| match call {
            None => ops::Verify::run_with(&store, args, None),
            Some((name, call)) => {
                let mut verifier = ops::JsonVerifier::new(name, call);
                ops::Verify::run_with(&store, args, Some(&mut verifier))
            }
        })
    }

    /// `verify_bundle`, each of the bundle's items scored by `verifier`.
    #[pyo3(name = "_verify_bundle")]
    fn verify_bundle(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        verifier: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let store = self.store()?;
        let args = crate::ops::arguments::<ops::VerifyBundle>(&store, Given::all(arguments))?;
        let verifier = verifier.filter(|v| !v.is_none());
        with_callable(py, &store, verifier, "verifier", |call| match call {
            None => ops::VerifyBundle::run_with(&store, args, None),
            Some((name, call)) => {
                let mut verifier = ops::JsonVerifier::new(name, call);
                ops::VerifyBundle::run_with(&store, args, Some(&mut verifier))
            }
        })
    }

    /// `context_for`: a `transcript` in any provider's shape made plain first, and what does
    /// not fit whole compressed by `summarize` (an exception or an answer that is no `str`:
    /// the item is cut).
    #[pyo3(name = "_context_for")]
    fn context_for(
        &self,
        py: Python<'_>,
        arguments: Kwargs<'_>,
        summarize: Option<&Bound<'_, PyAny>>,
    ) -> Result<Py<PyAny>> {
        let arguments = arguments.copy()?;
        if let Some(transcript) = arguments.get_item("transcript")? {
            arguments.set_item("transcript", crate::context::transcript(&transcript)?)?;
        }
        let store = self.store()?;
        let Some(summarize) = summarize.filter(|s| !s.is_none()) else {
            return run_named(py, &store, "context_for", &arguments);
        };
        if !summarize.is_callable() {
            return Err(core::Error::invalid("summarize", "must be callable").into());
        }
        let args = crate::ops::arguments::<ops::ContextFor>(&store, Given::all(&arguments))?;
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
        Ok(to_python(py, packet?)?)
    }

    /// `import_bundle`: a `Bundle` goes as its portable form, bytes as the text they hold.
    #[pyo3(name = "_import_bundle")]
    fn import_bundle(&self, py: Python<'_>, arguments: Kwargs<'_>) -> Result<Py<PyAny>> {
        let arguments = arguments.copy()?;
        if let Some(bundle) = arguments.get_item("bundle")? {
            if let Ok(made) = bundle.cast::<Bundle>() {
                arguments.set_item("bundle", made.get().portable()?)?;
            } else if let Ok(bytes) = bundle.cast::<PyBytes>() {
                let text = String::from_utf8(bytes.as_bytes().to_vec())
                    .map_err(|_| core::Error::invalid("bundle", "must be UTF-8 text"))?;
                arguments.set_item("bundle", text)?;
            }
        }
        run_named(py, &self.store()?, "import_bundle", &arguments)
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

    /// Holds `claim` while its work runs: `with store.lease(claim) as lease:` heartbeats every
    /// third of its lease from a thread of its own, and leaving the block completes the claim
    /// (with `lease.outcome`) or fails it with the exception that ended it.
    fn lease(slf: &Bound<'_, Self>, claim: &Bound<'_, PyAny>) -> Result<crate::lease::Lease> {
        let py = slf.py();
        let store = slf.get().store()?;
        let reference = claim_ref(&store, claim)?;
        let held = py.detach(|| store.lease(reference))?;
        Ok(crate::lease::Lease::new(
            held,
            slf.clone().into_any().unbind(),
            claim.clone().unbind(),
        ))
    }

    /// Reads the memory of `scope` (`{}` when none), calls `change` with it and writes what it
    /// returns, if nobody wrote meanwhile; otherwise reads and calls it again. When `change`
    /// raises, nothing is written and the exception propagates as it is.
    fn memory_update(
        &self,
        py: Python<'_>,
        scope: &str,
        change: &Bound<'_, PyAny>,
    ) -> Result<Py<PyAny>> {
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
        Ok(crate::ops::record(py, "Memory", &memory)?)
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
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) {
        self.close();
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " (closed)" } else { "" };
        format!("<handoff_core.Store {}{state}>", self.description)
    }
}

/// A `Claim` or `ClaimRef` (or what stands for one) read as every operation that settles a
/// claim reads it, its problems named `claim`.
fn claim_ref(store: &core::Store, claim: &Bound<'_, PyAny>) -> Result<core::ClaimRef> {
    let claim = Some(claim);
    let args = crate::ops::arguments::<ops::Heartbeat>(store, given!(None; claim))?;
    Ok(args.claim.into_ref()?)
}

/// Runs the operation `name` with `arguments` (a method that prepared them first).
fn run_named(
    py: Python<'_>,
    store: &core::Store,
    name: &str,
    arguments: &Bound<'_, PyDict>,
) -> Result<Py<PyAny>> {
    let run = crate::ops::runner(name)
        .ok_or_else(|| PyValueError::new_err(format!("the core has no operation {name:?}")))?;
    run(py, store, Given::all(arguments))
}

/// A Python callable as the core calls it: its JSON argument as a `dict`, its answer read as
/// JSON (see [`crate::curation::call_json`]), with its name (a verifier's `verified_by`).
type Callable<'c> = (String, &'c mut dyn FnMut(Value) -> core::Result<Value>);

/// Runs `run` with the GIL released, handing it `callable` (as [`Callable`]) or `None`. When
/// the call fails after the callable raised, the exception is raised as it was, nothing
/// written; an exception the operation survives (a verifier's, which fails only its item) is
/// in its result.
fn with_callable<T, F>(
    py: Python<'_>,
    store: &core::Store,
    callable: Option<&Bound<'_, PyAny>>,
    field: &'static str,
    run: F,
) -> Result<Py<PyAny>>
where
    T: serde::Serialize + 'static,
    F: FnOnce(Option<Callable<'_>>) -> core::Result<T> + Send,
{
    let Some(callable) = callable.filter(|c| !c.is_none()) else {
        let done = py.detach(|| run(None).map(Made::of))?;
        return Ok(done.make(py)?);
    };
    let name = crate::curation::callable_name(callable);
    let callable = callable.clone().unbind();
    let depth = store.limits().max_depth;
    let mut raised = None;
    let done = py.detach(|| {
        let mut call =
            |item: Value| crate::curation::call_json(&callable, &item, field, depth, &mut raised);
        run(Some((name, &mut call))).map(Made::of)
    });
    match (done, raised) {
        (Err(_), Some(exception)) => Err(exception.into()),
        (done, _) => Ok(done?.make(py)?),
    }
}
