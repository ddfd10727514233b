//! `handoff_core.PathStats`: how hand-offs between one pair of agents fare; `QueueCount`:
//! how many wait, run or ended, per status and addressee.

use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{opt_repr, py_repr, to_py};

/// Per from→to pair: how many hand-offs, how many completed, failed or rejected, and the
/// median seconds from creation to the first claim and to completion (`None` without data).
#[pyclass(module = "handoff_core", name = "PathStats", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PathStats {
    inner: core::PathStats,
}

impl PathStats {
    pub(crate) fn new(inner: core::PathStats) -> PathStats {
        PathStats { inner }
    }
}

#[pymethods]
impl PathStats {
    #[getter]
    #[allow(clippy::wrong_self_convention)] // the field's name, not a conversion
    fn from_agent(&self) -> &str {
        &self.inner.from_agent
    }
    #[getter]
    fn to_agent(&self) -> &str {
        &self.inner.to_agent
    }
    #[getter]
    fn total(&self) -> u64 {
        self.inner.total
    }
    #[getter]
    fn completed(&self) -> u64 {
        self.inner.completed
    }
    #[getter]
    fn failed(&self) -> u64 {
        self.inner.failed
    }
    #[getter]
    fn rejected(&self) -> u64 {
        self.inner.rejected
    }
    #[getter]
    fn median_claim_seconds(&self) -> Option<f64> {
        self.inner.median_claim_seconds
    }
    #[getter]
    fn median_complete_seconds(&self) -> Option<f64> {
        self.inner.median_complete_seconds
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        format!(
            "PathStats(from_agent={}, to_agent={}, total={}, completed={}, failed={}, rejected={}, \
             median_claim_seconds={}, median_complete_seconds={})",
            py_repr(&self.inner.from_agent),
            py_repr(&self.inner.to_agent),
            self.inner.total,
            self.inner.completed,
            self.inner.failed,
            self.inner.rejected,
            opt_repr(
                self.inner
                    .median_claim_seconds
                    .map(|s| s.to_string())
                    .as_deref()
            ),
            opt_repr(
                self.inner
                    .median_complete_seconds
                    .map(|s| s.to_string())
                    .as_deref()
            ),
        )
    }
}

/// How many handoffs are in one status for one addressee (`Store.queue_counts`).
#[pyclass(module = "handoff_core", name = "QueueCount", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct QueueCount {
    inner: core::QueueCount,
}

impl QueueCount {
    pub(crate) fn new(inner: core::QueueCount) -> QueueCount {
        QueueCount { inner }
    }
}

#[pymethods]
impl QueueCount {
    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status.as_str()
    }
    /// The agent they are addressed to; `None`: any agent may claim them.
    #[getter]
    fn to_agent(&self) -> Option<&str> {
        self.inner.to_agent.as_deref()
    }
    #[getter]
    fn count(&self) -> u64 {
        self.inner.count
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        format!(
            "QueueCount(status={}, to_agent={}, count={})",
            py_repr(self.inner.status.as_str()),
            opt_repr(self.inner.to_agent.as_deref()),
            self.inner.count
        )
    }
}
