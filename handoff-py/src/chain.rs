//! `handoff_core.Chain`, `Hop` and `ChainPolicy`.

use chrono::{DateTime, Utc};
use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{Args, opt_repr, py_repr, to_py};
use crate::errors::Result;

/// One hop of a chain: a handoff from one agent to the next.
#[pyclass(module = "handoff_core", name = "Hop", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Hop {
    inner: core::Hop,
}

impl Hop {
    pub(crate) fn new(inner: core::Hop) -> Hop {
        Hop { inner }
    }
}

#[pymethods]
impl Hop {
    #[getter]
    fn handoff_id(&self) -> &str {
        &self.inner.handoff_id
    }
    #[getter]
    fn parent_id(&self) -> Option<&str> {
        self.inner.parent_id.as_deref()
    }
    #[getter]
    #[allow(clippy::wrong_self_convention)] // the field's name, not a conversion
    fn from_agent(&self) -> Option<&str> {
        self.inner.from_agent.as_deref()
    }
    /// The addressee, or whoever claimed an open handoff.
    #[getter]
    fn to_agent(&self) -> Option<&str> {
        self.inner.to_agent.as_deref()
    }
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.as_str()
    }
    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status.as_str()
    }
    #[getter]
    fn created_at(&self) -> DateTime<Utc> {
        self.inner.created_at
    }

    /// The hop as a `dict`, with `created_at` as a `datetime`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = to_py(py, &self.inner)?.cast_into::<PyDict>()?;
        dict.set_item("created_at", self.inner.created_at)?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        format!(
            "Hop(handoff_id={}, from_agent={}, to_agent={}, status={})",
            py_repr(&self.inner.handoff_id),
            opt_repr(self.inner.from_agent.as_deref()),
            opt_repr(self.inner.to_agent.as_deref()),
            py_repr(self.inner.status.as_str())
        )
    }
}

/// A task's hops in creation order; `str(chain)` is its path, e.g. `claude → gemini → codex`.
#[pyclass(module = "handoff_core", name = "Chain", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Chain {
    inner: core::Chain,
}

impl Chain {
    pub(crate) fn new(inner: core::Chain) -> Chain {
        Chain { inner }
    }
}

#[pymethods]
impl Chain {
    #[getter]
    fn task_id(&self) -> &str {
        &self.inner.task_id
    }
    /// The hops, oldest first.
    #[getter]
    fn hops(&self) -> Vec<Hop> {
        self.inner
            .hops
            .iter()
            .cloned()
            .map(|inner| Hop { inner })
            .collect()
    }
    /// The agents the task passed through, in order (`*` for an open, unclaimed handoff).
    #[getter]
    fn path(&self) -> Vec<String> {
        self.inner.path()
    }

    /// `{"task_id": ..., "hops": [...], "path": [...]}` with `datetime`s for times.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("task_id", &self.inner.task_id)?;
        let hops = PyList::empty(py);
        for hop in self.hops() {
            hops.append(hop.to_dict(py)?)?;
        }
        dict.set_item("hops", hops)?;
        dict.set_item("path", self.inner.path())?;
        Ok(dict)
    }

    /// The chain's JSON form (`task_id`, `hops`).
    fn to_json(&self) -> String {
        serde_json::to_string(&self.inner).unwrap_or_default()
    }

    fn __len__(&self) -> usize {
        self.inner.hops.len()
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "Chain(task_id={}, path={})",
            py_repr(&self.inner.task_id),
            py_repr(&self.inner.to_string())
        )
    }
}

/// Limits on how a task may travel between agents, checked before a hop is created. Each
/// argument left `None` keeps the core's default (5 hops, no revisits, any pair allowed).
#[pyclass(module = "handoff_core", name = "ChainPolicy", frozen)]
pub struct ChainPolicy {
    pub(crate) inner: core::ChainPolicy,
}

#[pymethods]
impl ChainPolicy {
    #[new]
    #[pyo3(signature = (max_handoffs=None, max_revisits=None, collaborators=None))]
    fn py_new(
        max_handoffs: Option<&Bound<'_, PyAny>>,
        max_revisits: Option<&Bound<'_, PyAny>>,
        collaborators: Option<&Bound<'_, PyAny>>,
    ) -> Result<ChainPolicy> {
        let mut args = Args::new();
        let mut inner = core::ChainPolicy::default();
        if let Some(max) = args.opt_int("max_handoffs", max_handoffs, "a whole number at least 0") {
            inner.max_handoffs = max;
        }
        if let Some(max) = args.opt_int("max_revisits", max_revisits, "a whole number at least 0") {
            inner.max_revisits = max;
        }
        if let Some(collaborators) = collaborators.filter(|c| !c.is_none()) {
            match collaborators.cast::<PyDict>() {
                Ok(dict) => {
                    for (from, to) in dict.iter() {
                        let from = args.text("collaborators", &from);
                        let to = args.texts(&format!("collaborators[{from:?}]"), Some(&to));
                        inner = inner.allow(from, to);
                    }
                }
                Err(_) => {
                    args.problem("collaborators", "must be a dict of agent -> list of agents")
                }
            }
        }
        args.finish()?;
        Ok(ChainPolicy { inner })
    }

    /// A policy with no limits at all.
    #[staticmethod]
    fn unlimited() -> ChainPolicy {
        ChainPolicy {
            inner: core::ChainPolicy::unlimited(),
        }
    }

    #[getter]
    fn max_handoffs(&self) -> usize {
        self.inner.max_handoffs
    }
    #[getter]
    fn max_revisits(&self) -> usize {
        self.inner.max_revisits
    }
    /// Who may hand off to whom, or `None` when every pair is allowed.
    #[getter]
    fn collaborators<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(map) = &self.inner.collaborators else {
            return Ok(None);
        };
        let dict = PyDict::new(py);
        for (from, to) in map {
            dict.set_item(from, PyList::new(py, to)?)?;
        }
        Ok(Some(dict))
    }

    fn __repr__(&self) -> String {
        format!(
            "ChainPolicy(max_handoffs={}, max_revisits={}, collaborators={})",
            self.inner.max_handoffs,
            self.inner.max_revisits,
            if self.inner.collaborators.is_some() {
                "{...}"
            } else {
                "None"
            }
        )
    }
}
