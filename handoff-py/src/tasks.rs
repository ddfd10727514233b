//! `handoff_core.Task`, `TaskSummary` and `Session`: a read-only view of the core's value with
//! one property per field and `to_dict()` (a task's in the seed's `task-state.json` form, a
//! summary's in the seed's list form; a session's hops are `Hop`s). The other task, memory
//! and session results are generated records (`handoff_core._records`).

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::task::{self, TaskHeader};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use crate::chain::Hop;
use crate::convert::{json_to_py, object_to_py, opt_repr, py_repr, to_py};

/// A serialisable value's JSON word (`in_progress`, `success`).
pub(crate) fn word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A list of JSON values as a Python `list`.
fn values_to_py<'py>(py: Python<'py>, values: &[Value]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for value in values {
        list.append(json_to_py(py, value)?)?;
    }
    Ok(list)
}

/// A task's members as a Python `list` of `dict`s, each with every key (`role` `None` when
/// it gave none).
fn members_to_py<'py>(py: Python<'py>, members: &[task::Member]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for member in members {
        let task::Member {
            agent,
            role,
            objectives,
            branch,
            joined_at,
        } = member;
        let value = serde_json::json!({
            "agent": agent, "role": role, "objectives": objectives, "branch": branch,
            "joined_at": core::clock::to_text(joined_at),
        });
        list.append(json_to_py(py, &value)?)?;
    }
    Ok(list)
}

/// The methods of `Task` and `TaskSummary`: the getters of the `TaskHeader` reached by
/// `$header`, and `$own` (pyo3 takes one `#[pymethods]` block per class).
macro_rules! task_methods {
    ($ty:ident, |$this:ident| $header:expr, { $($own:tt)* }) => {
        #[pymethods]
        impl $ty {
            $($own)*

            #[getter]
            fn id(&self) -> &str {
                let $this = self;
                &$header.id
            }
            #[getter]
            fn name(&self) -> &str {
                let $this = self;
                &$header.name
            }
            /// `pending`, `in_progress`, `paused`, `completed`, `failed` or `cancelled`.
            #[getter]
            fn status(&self) -> String {
                let $this = self;
                word(&$header.status)
            }
            /// Grows by one with every change: what `update_task` compares.
            #[getter]
            fn version(&self) -> u64 {
                let $this = self;
                $header.version
            }
            #[getter]
            fn goal(&self) -> &str {
                let $this = self;
                &$header.goal
            }
            #[getter]
            fn success_criteria(&self) -> Vec<String> {
                let $this = self;
                $header.success_criteria.clone()
            }
            #[getter]
            fn created_at(&self) -> DateTime<Utc> {
                let $this = self;
                $header.created_at
            }
            #[getter]
            fn started_at(&self) -> Option<DateTime<Utc>> {
                let $this = self;
                $header.started_at
            }
            #[getter]
            fn updated_at(&self) -> DateTime<Utc> {
                let $this = self;
                $header.updated_at
            }
            #[getter]
            fn completed_at(&self) -> Option<DateTime<Utc>> {
                let $this = self;
                $header.completed_at
            }
            #[getter]
            fn orchestrator(&self) -> Option<&str> {
                let $this = self;
                $header.orchestrator.as_deref()
            }
            #[getter]
            fn escalate_to(&self) -> &str {
                let $this = self;
                &$header.escalate_to
            }
            #[getter]
            fn steps_total(&self) -> usize {
                let $this = self;
                $header.steps_total
            }
            /// Steps completed or skipped.
            #[getter]
            fn steps_done(&self) -> usize {
                let $this = self;
                $header.steps_done
            }
            /// Failed attempts of any step.
            #[getter]
            fn retries(&self) -> u32 {
                let $this = self;
                $header.retries
            }
            /// The model tokens its steps' workers reported on completion.
            #[getter]
            fn tokens_used(&self) -> Option<u64> {
                let $this = self;
                $header.tokens_used
            }
            /// The agents that joined it (`join_task`), in the order they joined: each a
            /// `dict` (`agent`, `role`, `objectives`, `branch`, `joined_at`).
            #[getter]
            fn members<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                let $this = self;
                members_to_py(py, &$header.members)
            }
            /// What came of it, as whoever completed it said (`complete_task`).
            #[getter]
            fn result_summary(&self) -> Option<&str> {
                let $this = self;
                $header.result_summary.as_deref()
            }
            /// Why it failed, when it did.
            #[getter]
            fn failure(&self) -> Option<&str> {
                let $this = self;
                $header.failure.as_deref()
            }
            #[getter]
            fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                let $this = self;
                object_to_py(py, &$header.context)
            }
            #[getter]
            fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                let $this = self;
                object_to_py(py, &$header.metadata)
            }
            #[getter]
            fn artifacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                let $this = self;
                values_to_py(py, &$header.artifacts)
            }
            #[getter]
            fn issues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                let $this = self;
                values_to_py(py, &$header.issues)
            }

            fn __repr__(&self) -> String {
                let $this = self;
                format!(
                    "{}(id={}, name={}, status={}, version={}, steps_done={}, steps_total={})",
                    stringify!($ty),
                    py_repr(&$header.id),
                    py_repr(&$header.name),
                    py_repr(&word(&$header.status)),
                    $header.version,
                    $header.steps_done,
                    $header.steps_total,
                )
            }
        }
    };
}

/// A task: its goal, its plan's steps and where each stands. `to_dict()` is the seed's
/// `task-state.json` form (`plan.goal`, `plan.steps[].dependencies`, `plan.current_steps`).
#[pyclass(module = "handoff_core", name = "Task", frozen)]
pub struct Task {
    inner: core::store::Task,
}

impl Task {
    pub(crate) fn new(inner: core::store::Task) -> Task {
        Task { inner }
    }
}

task_methods!(Task, |this| this.inner.header, {
    /// The steps in plan order, each a `dict` with the seed's names (`id`, `name`, `agent`
    /// (`None` for an objective nobody was assigned), `dependencies`, `status`, `attempts`,
    /// `max_attempts`, `handoff_id`, `escalation_id` (while it is escalated), `output`,
    /// `error`, ...).
    #[getter]
    fn steps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut values = self.inner.steps_values();
        for (value, step) in values.iter_mut().zip(&self.inner.steps) {
            if let Value::Object(fields) = value {
                fields.insert("escalation_id".into(), step.escalation_id.clone().into());
            }
        }
        values_to_py(py, &values)
    }

    /// The ids of the steps offered or in progress.
    #[getter]
    fn current_steps(&self) -> Vec<&str> {
        self.inner.current_steps()
    }

    /// The task in the seed's `task-state.json` form.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.inner.to_value())
    }
});

/// A task without its steps, as `list_tasks` returns it.
#[pyclass(module = "handoff_core", name = "TaskSummary", frozen)]
pub struct TaskSummary {
    inner: TaskHeader,
}

impl TaskSummary {
    pub(crate) fn new(inner: TaskHeader) -> TaskSummary {
        TaskSummary { inner }
    }
}

task_methods!(TaskSummary, |this| this.inner, {
    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.inner.summary_value())
    }
});

/// A conversation as the store knows it: who owns it now, and its handoffs as hops.
#[pyclass(module = "handoff_core", name = "Session", frozen)]
pub struct Session {
    inner: core::store::Session,
}

impl Session {
    pub(crate) fn new(inner: core::store::Session) -> Session {
        Session { inner }
    }
}

#[pymethods]
impl Session {
    #[getter]
    fn session_id(&self) -> &str {
        &self.inner.session_id
    }
    /// The holder of its latest handoff once taken, else that handoff's sender; `None`
    /// before its first handoff.
    #[getter]
    fn current_agent(&self) -> Option<&str> {
        self.inner.current_agent.as_deref()
    }
    /// Its handoffs as hops, oldest first.
    #[getter]
    fn handoff_chain(&self) -> Vec<Hop> {
        self.inner
            .handoff_chain
            .iter()
            .cloned()
            .map(Hop::new)
            .collect()
    }
    /// The session's shared context: the memory of scope `session:<id>`.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        object_to_py(py, &self.inner.context)
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Session(session_id={}, current_agent={}, hops={})",
            py_repr(&self.inner.session_id),
            opt_repr(self.inner.current_agent.as_deref()),
            self.inner.handoff_chain.len()
        )
    }
}
