//! `handoff_core.Event`: one entry of the event log.

use chrono::{DateTime, Utc};
use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{json_to_py, opt_repr, py_repr};

/// One entry of the event log: what happened to which handoff, when, and by whom.
#[pyclass(module = "handoff_core", name = "Event", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Event {
    inner: core::Event,
}

impl Event {
    pub(crate) fn new(inner: core::Event) -> Event {
        Event { inner }
    }

    /// The event as it may be shown: every text its change carries (an outcome, a reason, an
    /// error, the addressee, whatever a newer change adds) through the core's redaction, as
    /// the CLI shows events.
    pub(crate) fn redacted(mut inner: core::Event) -> Event {
        if let Ok(mut change) = serde_json::to_value(&inner.change) {
            crate::redact::redact_json(&mut change);
            if let Ok(change) = serde_json::from_value(change) {
                inner.change = change;
            }
        }
        Event { inner }
    }
}

#[pymethods]
impl Event {
    /// Position in the store's log; strictly increasing in write order.
    #[getter]
    fn seq(&self) -> u64 {
        self.inner.seq
    }
    /// The handoff it concerns.
    #[getter]
    fn handoff_id(&self) -> &str {
        &self.inner.handoff_id
    }
    /// When it happened (UTC).
    #[getter]
    fn at(&self) -> DateTime<Utc> {
        self.inner.at
    }
    /// Who caused it; `None` for the clock (lapses, expiry).
    #[getter]
    fn actor(&self) -> Option<&str> {
        self.inner.actor.as_deref()
    }
    /// What happened: `created`, `claimed`, `heartbeat`, `released`, `lease_expired`,
    /// `attempt_failed`, `failed`, `completed`, `rejected`, `cancelled` or `expired`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.change.kind()
    }
    /// The event's details in their JSON form, keys in snake_case (e.g. `{"agent": ...,
    /// "token": ..., "lease_until": ...}` for a claim, `{"task_id": ..., "to_agent": ...}` for a
    /// creation, whose record `get` reads); `{}` when there are none.
    #[getter]
    fn detail<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = serde_json::to_value(&self.inner.change)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        match value.get("detail") {
            Some(detail) => json_to_py(py, detail),
            None => Ok(PyDict::new(py).into_any()),
        }
    }

    /// The event as a `dict` (`seq`, `handoff_id`, `at` as a `datetime`, `actor`, `kind`,
    /// `detail`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("seq", self.seq())?;
        dict.set_item("handoff_id", self.handoff_id())?;
        dict.set_item("at", self.at())?;
        dict.set_item("actor", self.actor())?;
        dict.set_item("kind", self.kind())?;
        dict.set_item("detail", self.detail(py)?)?;
        Ok(dict)
    }

    /// The event's JSON form.
    fn to_json(&self) -> String {
        serde_json::to_string(&self.inner).unwrap_or_default()
    }

    fn __repr__(&self) -> String {
        format!(
            "Event(seq={}, handoff_id={}, kind={}, actor={})",
            self.inner.seq,
            py_repr(&self.inner.handoff_id),
            py_repr(self.kind()),
            opt_repr(self.inner.actor.as_deref())
        )
    }
}
