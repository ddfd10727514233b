//! `handoff_core.ProtocolRun` and `ProtocolStats`: what the manager/worker protocol's reads
//! return. Each is a read-only view of the core's value with one property per field and
//! `to_dict()`; nested parts (the history, each run's summary) come as `dict`s in the seed's
//! JSON form.

use chrono::{DateTime, Utc};
use handoff_core::protocol::{self, Run};
use pyo3::prelude::*;

use crate::convert::to_py;
use crate::tasks::word;

/// A task's manager/worker run as it stands.
#[pyclass(module = "handoff_core", name = "ProtocolRun", frozen)]
pub struct ProtocolRun {
    inner: Run,
}

impl ProtocolRun {
    pub(crate) fn new(inner: Run) -> ProtocolRun {
        ProtocolRun { inner }
    }
}

#[pymethods]
impl ProtocolRun {
    #[getter]
    fn task_id(&self) -> &str {
        &self.inner.task_id
    }
    #[getter]
    fn manager(&self) -> &str {
        &self.inner.manager
    }
    #[getter]
    fn worker(&self) -> &str {
        &self.inner.worker
    }
    #[getter]
    fn escalate_to(&self) -> &str {
        &self.inner.escalate_to
    }
    /// The initialization's instructions.
    #[getter]
    fn goal(&self) -> &str {
        &self.inner.goal
    }
    #[getter]
    fn success_criteria(&self) -> Vec<String> {
        self.inner.success_criteria.clone()
    }
    /// Who holds the latest message: `working`, `reviewing`, `recovering`, `escalated`,
    /// `resuming` or `completed`.
    #[getter]
    fn phase(&self) -> String {
        word(&self.inner.phase)
    }
    /// The handoff whose holder makes the next call (`None` once completed).
    #[getter]
    fn message_id(&self) -> Option<&str> {
        self.inner.message_id.as_deref()
    }
    #[getter]
    fn iteration(&self) -> u32 {
        self.inner.iteration
    }
    #[getter]
    fn max_iterations(&self) -> u32 {
        self.inner.max_iterations
    }
    #[getter]
    fn retry_count(&self) -> u32 {
        self.inner.retry_count
    }
    #[getter]
    fn max_retries(&self) -> u32 {
        self.inner.max_retries
    }
    #[getter]
    fn escalations(&self) -> u32 {
        self.inner.escalations
    }
    /// Every iteration (`iteration`, `manager_instructions`, `worker_report`, `outcome`).
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.history)
    }
    #[getter]
    fn files_modified(&self) -> Vec<String> {
        self.inner.files_modified.clone()
    }
    #[getter]
    fn project_status(&self) -> &str {
        &self.inner.project_status
    }
    /// Dependencies the manager's context updates added so far, in order.
    #[getter]
    fn dependencies(&self) -> Vec<String> {
        self.inner.dependencies.clone()
    }
    /// The initialization's settings, in words (`project root: …`, `constraint: …`).
    #[getter]
    fn configuration(&self) -> Vec<String> {
        self.inner.configuration.clone()
    }
    #[getter]
    fn started_at(&self) -> DateTime<Utc> {
        self.inner.started_at
    }
    #[getter]
    fn updated_at(&self) -> DateTime<Utc> {
        self.inner.updated_at
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "ProtocolRun(task_id={:?}, phase={:?}, iteration={}, retry_count={})",
            self.inner.task_id,
            self.phase(),
            self.inner.iteration,
            self.inner.retry_count
        )
    }
}

/// How the store's protocol runs went.
#[pyclass(module = "handoff_core", name = "ProtocolStats", frozen)]
pub struct ProtocolStats {
    inner: protocol::ProtocolStats,
}

impl ProtocolStats {
    pub(crate) fn new(inner: protocol::ProtocolStats) -> ProtocolStats {
        ProtocolStats { inner }
    }
}

#[pymethods]
impl ProtocolStats {
    #[getter]
    fn runs(&self) -> u64 {
        self.inner.runs
    }
    #[getter]
    fn completed(&self) -> u64 {
        self.inner.completed
    }
    #[getter]
    fn first_try_completions(&self) -> u64 {
        self.inner.first_try_completions
    }
    /// Completed runs that needed one iteration, no recovery and no human, from 0 to 1.
    #[getter]
    fn first_try_completion_rate(&self) -> f64 {
        self.inner.first_try_completion_rate
    }
    #[getter]
    fn escalated(&self) -> u64 {
        self.inner.escalated
    }
    /// Runs escalated at least once, from 0 to 1.
    #[getter]
    fn escalation_rate(&self) -> f64 {
        self.inner.escalation_rate
    }
    #[getter]
    fn retries(&self) -> u64 {
        self.inner.retries
    }
    #[getter]
    fn mean_iterations(&self) -> f64 {
        self.inner.mean_iterations
    }
    #[getter]
    fn median_iteration_seconds(&self) -> Option<f64> {
        self.inner.median_iteration_seconds
    }
    /// Each run (`task_id`, `phase`, `iterations`, `retries`, `escalations`, `started_at`,
    /// `updated_at`), oldest first.
    #[getter]
    fn per_run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.per_run)
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "ProtocolStats(runs={}, completed={}, escalation_rate={})",
            self.inner.runs, self.inner.completed, self.inner.escalation_rate
        )
    }
}
