//! `handoff_core.CheckReport` and `Damage`: what `Store.check()` found damaged in a store, and
//! with `repair=True`, what it moved aside.

use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{opt_repr, py_repr, to_py};

/// One piece of damage `Store.check()` found: what (`handoffs/<id>.json`, `events.jsonl line
/// 7`, or a part of a database store), the problem, and what the repair did about it (`None`
/// when it was not repaired).
#[pyclass(module = "handoff_core", name = "Damage", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Damage {
    inner: core::Damage,
}

#[pymethods]
impl Damage {
    /// What is damaged: a file of a files store, or a part of a database store.
    #[getter]
    fn what(&self) -> &str {
        &self.inner.what
    }
    /// What is wrong with it.
    #[getter]
    fn problem(&self) -> &str {
        &self.inner.problem
    }
    /// What the repair did (`moved to quarantine/...`); `None` when it was not repaired.
    #[getter]
    fn repaired(&self) -> Option<&str> {
        self.inner.repaired.as_deref()
    }

    /// `{"what": ..., "problem": ..., "repaired": ...}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        // Destructured in full: a field the core adds fails to compile here until shown.
        let core::Damage {
            what,
            problem,
            repaired,
        } = &self.inner;
        format!(
            "Damage(what={}, problem={}, repaired={})",
            py_repr(what),
            py_repr(problem),
            opt_repr(repaired.as_deref())
        )
    }
}

/// What `Store.check()` found: nothing damaged when `damage` is empty (`is_clean()`).
#[pyclass(module = "handoff_core", name = "CheckReport", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct CheckReport {
    inner: core::CheckReport,
}

impl CheckReport {
    pub(crate) fn new(inner: core::CheckReport) -> CheckReport {
        CheckReport { inner }
    }
}

#[pymethods]
impl CheckReport {
    /// Each piece of damage, in the order it was found.
    #[getter]
    fn damage(&self) -> Vec<Damage> {
        self.inner
            .damage
            .iter()
            .cloned()
            .map(|inner| Damage { inner })
            .collect()
    }

    /// Whether nothing is damaged.
    fn is_clean(&self) -> bool {
        self.inner.is_clean()
    }

    /// `{"damage": [{"what": ..., "problem": ..., "repaired": ...}, ...]}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        let damage: Vec<String> = self.damage().iter().map(Damage::__repr__).collect();
        format!("CheckReport(damage=[{}])", damage.join(", "))
    }
}
