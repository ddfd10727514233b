//! `handoff_core.Lease`: a claim held while its work runs (`with store.lease(claim) as lease:`).
//! The core's lease renews the claim from a thread of its own, without the GIL; leaving the
//! block completes the claim (with `lease.outcome`), or fails it with the exception that ended
//! the block, which then propagates as it is.

use std::sync::Mutex;

use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

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
}

impl Lease {
    pub(crate) fn new(inner: core::store::Lease) -> Lease {
        Lease {
            handoff_id: inner.claim().handoff_id.clone(),
            inner: Mutex::new(Some(inner)),
            outcome: String::new(),
        }
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

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Settles the claim unless the block did: completed, or failed with the exception that
    /// ended the block (`"<type>: <message>"`), which then propagates.
    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> Result<bool> {
        if self.settled() {
            return Ok(false);
        }
        match exc.get_item(1).ok().filter(|e| !e.is_none()) {
            None => self.complete(py, None).map(drop)?,
            Some(error) => {
                let kind = error.get_type().name()?.to_string();
                let text = format!("{kind}: {}", error.str()?);
                // The block's own exception matters more than one from settling.
                let _ = self.fail(py, text);
            }
        }
        Ok(false)
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
