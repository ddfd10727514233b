//! `handoff_core.Lease`: a claim held while its work runs (`with store.lease(claim) as lease:`).
//! The core's lease renews the claim from a thread of its own, without the GIL; leaving the
//! block completes the claim (with `lease.outcome`), or fails it with the exception that ended
//! the block, which then propagates as it is. `lease.progress(value)` reports how the work goes
//! (a heartbeat carrying it, now; the later heartbeats leave it on the record).
//!
//! The block is the holder's span when OpenTelemetry is in use: `handoff_core.tracing` (written
//! in Python, where the OpenTelemetry API is) opens it on entering, under the record's
//! `traceparent` so that the successor's work continues the creator's trace, and it is closed
//! once the claim is settled.

use std::sync::{Mutex, PoisonError};

use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert::ToJson;
use crate::errors::Result;
use crate::record::Handoff;

/// A claim held while its work runs: heartbeats every third of its lease until it is settled.
#[pyclass(module = "handoff_core", name = "Lease")]
pub struct Lease {
    inner: Mutex<Option<core::store::Lease>>,
    handoff_id: String,
    /// What completing the claim on leaving the block says it came to.
    #[pyo3(get, set)]
    outcome: String,
    /// The store and the claim as Python gave them: what the span of the block is made of
    /// (the claim's record, or the store to read it from).
    store: Py<PyAny>,
    claim: Py<PyAny>,
    /// The span `__enter__` opened (a context manager), which `__exit__` closes.
    span: Mutex<Option<Py<PyAny>>>,
}

impl Lease {
    pub(crate) fn new(inner: core::store::Lease, store: Py<PyAny>, claim: Py<PyAny>) -> Lease {
        Lease {
            handoff_id: inner.claim().handoff_id.clone(),
            inner: Mutex::new(Some(inner)),
            outcome: String::new(),
            store,
            claim,
            span: Mutex::new(None),
        }
    }

    /// What leaving the block writes: nothing when the block settled the claim, else a
    /// completion, or a failure with the block's exception (whose error, if any, is dropped:
    /// the block's own exception matters more).
    fn settle_on_exit(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> Result<bool> {
        if self.settled() {
            return Ok(false);
        }
        match exc.get_item(1).ok().filter(|e| !e.is_none()) {
            None => self.complete(py, None).map(drop)?,
            Some(error) => {
                let kind = error.get_type().name()?.to_string();
                let text = format!("{kind}: {}", error.str()?);
                let _ = self.fail(py, text);
            }
        }
        Ok(false)
    }

    /// The lease, taken to be settled; an error once it was.
    fn take(&self) -> Result<core::store::Lease> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| core::Error::invalid("lease", "was completed or failed already").into())
    }
}

#[pymethods]
impl Lease {
    /// The held handoff's id.
    #[getter]
    fn handoff_id(&self) -> &str {
        &self.handoff_id
    }

    /// Whether a heartbeat found the claim gone (lapsed, cancelled, taken over): the work
    /// should stop, since completing it will raise `LeaseLost`.
    #[getter]
    fn lost(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(core::store::Lease::is_lost)
    }

    /// Whether it was completed or failed.
    #[getter]
    fn settled(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Reports how the work is going: a heartbeat carrying `progress` (a small JSON value:
    /// `dict`, `list`, `str`, number, `bool` or `None`), sent now. The record keeps it until the
    /// next report (the lease's own heartbeats leave it in place) and `get` returns it.
    /// `LeaseLost` once the claim is gone (and `lost` says so from then on); `ValidationError`
    /// for a value that is not JSON or is too large.
    fn progress(&self, py: Python<'_>, progress: &Bound<'_, PyAny>) -> Result<Handoff> {
        let mut convert = ToJson::untyped(core::MAX_DEPTH);
        let value = convert.json("progress", progress);
        let problems = convert.into_problems();
        if !problems.is_empty() {
            return Err(core::Error::Validation { problems }.into());
        }
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let lease = guard
            .as_ref()
            .ok_or_else(|| core::Error::invalid("lease", "was completed or failed already"))?;
        // Settling waits for this write (it takes the lease out of the lock); the heartbeat
        // thread does not take the lock, so the GIL released here cannot deadlock with it.
        Ok(Handoff::new(py.detach(|| lease.progress(value))?))
    }

    /// Stops the heartbeats and completes the claim (with `outcome`, else `lease.outcome`).
    #[pyo3(signature = (outcome = None))]
    fn complete(&self, py: Python<'_>, outcome: Option<String>) -> Result<Handoff> {
        let lease = self.take()?;
        let outcome = outcome.unwrap_or_else(|| self.outcome.clone());
        Ok(Handoff::new(py.detach(|| lease.complete(&outcome))?))
    }

    /// Stops the heartbeats and fails the claim with `error` (retried while attempts are
    /// left).
    fn fail(&self, py: Python<'_>, error: String) -> Result<Handoff> {
        let lease = self.take()?;
        Ok(Handoff::new(py.detach(|| lease.fail(&error))?))
    }

    /// Opens the holder's span (with OpenTelemetry in use): a child of the record's
    /// `traceparent`, current until the block ends.
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let py = slf.py();
        let opened = {
            let this = slf.borrow();
            let open = py
                .import("handoff_core._trace_context")?
                .getattr("lease_span")?;
            open.call1((this.store.bind(py), this.claim.bind(py)))?
        };
        if !opened.is_none() {
            opened.call_method0("__enter__")?;
            *slf.borrow()
                .span
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(opened.unbind());
        }
        Ok(slf)
    }

    /// Settles the claim unless the block did: completed, or failed with the exception that
    /// ended the block (`"<type>: <message>"`), which then propagates. Then closes the span
    /// `__enter__` opened, with that exception, or with the refusal to complete.
    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> Result<()> {
        // `None`: an exception that ended the block propagates (the stubs say so, for
        // type checkers to follow a return inside the block).
        let settled = self.settle_on_exit(py, exc).map(drop);
        let span = self
            .span
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(span) = span else {
            return settled;
        };
        match settled {
            Ok(()) => {
                span.call_method1(py, "__exit__", exc)?;
                Ok(())
            }
            Err(failure) => {
                let error = PyErr::from(failure);
                let raised = (error.get_type(py), error.value(py), error.traceback(py));
                span.call_method1(py, "__exit__", raised)?;
                Err(error.into())
            }
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Lease(handoff_id={:?}, settled={}, lost={})",
            self.handoff_id,
            self.settled(),
            self.lost()
        )
    }
}
