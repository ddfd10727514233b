//! `handoff_core.Conversation`, `Fact`, `VerifyReport` and `MergeReport`: what the curation
//! operations return (DESIGN §9), each a read-only view of the core's value with one property
//! per field and `to_dict()`; messages, branches and the curation log come as `dict`s, ready
//! to hand to a model or to JSON. Also how a Python verifier or judge is called.

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::curation;
use pyo3::prelude::*;
use serde_json::Value;

use crate::convert::{ToJson, json_to_py, opt_repr, py_repr, to_py};
use crate::tasks::word;

/// A serialisable core value as the Python value its JSON makes (a `dict`, for the curation
/// results). Serialising the core's own values cannot fail; `None` stands in if it ever did.
pub(crate) fn as_python<T: serde::Serialize>(value: &T) -> Py<PyAny> {
    Python::attach(|py| {
        to_py(py, value)
            .map(Bound::unbind)
            .unwrap_or_else(|_| py.None())
    })
}

/// A conversation on a branch of curated memory.
#[pyclass(module = "handoff_core", name = "Conversation", frozen)]
pub struct Conversation {
    inner: curation::Conversation,
}

impl Conversation {
    pub(crate) fn new(inner: curation::Conversation) -> Conversation {
        Conversation { inner }
    }
}

#[pymethods]
impl Conversation {
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn branch(&self) -> &str {
        self.inner.branch.as_str()
    }
    #[getter]
    fn title(&self) -> Option<&str> {
        self.inner.title.as_deref()
    }
    #[getter]
    fn task_id(&self) -> Option<&str> {
        self.inner.task_id.as_deref()
    }
    #[getter]
    fn agent(&self) -> Option<&str> {
        self.inner.agent.as_deref()
    }
    #[getter]
    fn message_count(&self) -> u64 {
        self.inner.message_count
    }
    /// `verified`, `unverified` (until a verifier scores it) or `invalidated`.
    #[getter]
    fn verification_status(&self) -> String {
        word(&self.inner.verification_status)
    }
    #[getter]
    fn verification_score(&self) -> Option<f64> {
        self.inner.verification_score
    }
    #[getter]
    fn explanation(&self) -> Option<&str> {
        self.inner.explanation.as_deref()
    }
    #[getter]
    fn verified_by(&self) -> Option<&str> {
        self.inner.verified_by.as_deref()
    }
    /// For a cherry-pick's result: the conversation it was picked from.
    #[getter]
    fn cherry_picked_from(&self) -> Option<&str> {
        self.inner.cherry_picked_from.as_deref()
    }
    /// For a merge's copy: the conversation it was copied from.
    #[getter]
    fn origin(&self) -> Option<&str> {
        self.inner.origin.as_deref()
    }
    /// Whether a merge copied it to the parent branch.
    #[getter]
    fn promoted(&self) -> bool {
        self.inner.promoted
    }
    #[getter]
    fn created_at(&self) -> DateTime<Utc> {
        self.inner.created_at
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Conversation(id={}, branch={}, message_count={}, verification_status={})",
            py_repr(&self.inner.id),
            py_repr(self.inner.branch.as_str()),
            self.inner.message_count,
            py_repr(&self.verification_status()),
        )
    }
}

/// A fact on a branch, with what the verification gate made of it.
#[pyclass(module = "handoff_core", name = "Fact", frozen)]
pub struct Fact {
    inner: curation::Fact,
}

impl Fact {
    pub(crate) fn new(inner: curation::Fact) -> Fact {
        Fact { inner }
    }
}

#[pymethods]
impl Fact {
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn branch(&self) -> &str {
        self.inner.branch.as_str()
    }
    #[getter]
    fn text(&self) -> &str {
        &self.inner.text
    }
    #[getter]
    fn confidence(&self) -> Option<f64> {
        self.inner.confidence
    }
    #[getter]
    fn source(&self) -> Option<&str> {
        self.inner.source.as_deref()
    }
    /// `active`, `verified`, `invalidated`, `promoted` or `superseded`.
    #[getter]
    fn status(&self) -> String {
        word(&self.inner.status)
    }
    #[getter]
    fn score(&self) -> Option<f64> {
        self.inner.score
    }
    #[getter]
    fn explanation(&self) -> Option<&str> {
        self.inner.explanation.as_deref()
    }
    /// The verifier's name, or `neutral` when there was none.
    #[getter]
    fn verified_by(&self) -> Option<&str> {
        self.inner.verified_by.as_deref()
    }
    #[getter]
    fn verified_at(&self) -> Option<DateTime<Utc>> {
        self.inner.verified_at
    }
    /// For a merge's copy: the fact it was copied from.
    #[getter]
    fn origin(&self) -> Option<&str> {
        self.inner.origin.as_deref()
    }
    #[getter]
    fn created_at(&self) -> DateTime<Utc> {
        self.inner.created_at
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Fact(id={}, branch={}, status={}, score={}, text={})",
            py_repr(&self.inner.id),
            py_repr(self.inner.branch.as_str()),
            py_repr(&self.status()),
            self.inner
                .score
                .map_or_else(|| "None".to_owned(), |s| s.to_string()),
            py_repr(&self.inner.text),
        )
    }
}

/// What a verification did.
#[pyclass(module = "handoff_core", name = "VerifyReport", frozen)]
pub struct VerifyReport {
    inner: curation::VerifyReport,
}

impl VerifyReport {
    pub(crate) fn new(inner: curation::VerifyReport) -> VerifyReport {
        VerifyReport { inner }
    }
}

#[pymethods]
impl VerifyReport {
    #[getter]
    fn branch(&self) -> Option<&str> {
        self.inner.branch.as_ref().map(curation::Branch::as_str)
    }
    #[getter]
    fn verified(&self) -> u64 {
        self.inner.verified
    }
    #[getter]
    fn invalidated(&self) -> u64 {
        self.inner.invalidated
    }
    /// Scored in between (all of them without a verifier: the neutral 0.5).
    #[getter]
    fn unverified(&self) -> u64 {
        self.inner.unverified
    }
    /// Items the verifier failed on (raised, or answered no score from 0 to 1), left as
    /// they were.
    #[getter]
    fn failed(&self) -> u64 {
        self.inner.failed
    }
    /// Every item (`kind`, `id`, `score`, `verdict`, `error`), in the order verified.
    #[getter]
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.items)
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "VerifyReport(branch={}, verified={}, invalidated={}, unverified={}, failed={})",
            opt_repr(self.branch()),
            self.inner.verified,
            self.inner.invalidated,
            self.inner.unverified,
            self.inner.failed
        )
    }
}

/// What a merge did.
#[pyclass(module = "handoff_core", name = "MergeReport", frozen)]
pub struct MergeReport {
    inner: curation::MergeReport,
}

impl MergeReport {
    pub(crate) fn new(inner: curation::MergeReport) -> MergeReport {
        MergeReport { inner }
    }
}

#[pymethods]
impl MergeReport {
    #[getter]
    fn branch(&self) -> Option<&str> {
        self.inner.branch.as_ref().map(curation::Branch::as_str)
    }
    #[getter]
    fn into(&self) -> Option<&str> {
        self.inner.into.as_ref().map(curation::Branch::as_str)
    }
    /// Facts copied up (their sources are now `promoted`).
    #[getter]
    fn facts(&self) -> u64 {
        self.inner.facts
    }
    #[getter]
    fn conversations(&self) -> u64 {
        self.inner.conversations
    }
    /// Items left where they are (unverified, invalidated).
    #[getter]
    fn kept(&self) -> u64 {
        self.inner.kept
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "MergeReport(branch={}, into={}, facts={}, conversations={}, kept={})",
            opt_repr(self.branch()),
            opt_repr(self.into()),
            self.inner.facts,
            self.inner.conversations,
            self.inner.kept
        )
    }
}

/// Calls a verifier's or a judge's `callable` with `argument` (JSON, given as a `dict`) and
/// reads its answer as JSON. An exception is kept in `raised` (to be raised again as it was,
/// where the call must fail) and reported to the core as `field`'s failure.
pub(crate) fn call_json(
    callable: &Py<PyAny>,
    argument: &Value,
    field: &str,
    max_depth: usize,
    raised: &mut Option<PyErr>,
) -> core::Result<Value> {
    Python::attach(|py| {
        let answered = json_to_py(py, argument).and_then(|arg| callable.bind(py).call1((arg,)));
        let answer = match answered {
            Ok(answer) => answer,
            Err(err) => {
                let shown = err.to_string();
                *raised = Some(err);
                return Err(core::Error::invalid(field, format!("raised {shown}")));
            }
        };
        let mut convert = ToJson::untyped(max_depth);
        let json = convert.json(field, &answer);
        match convert.into_problems().into_iter().next() {
            None => Ok(json),
            Some(problem) => Err(core::Error::invalid(field, problem.rule)),
        }
    })
}

/// What a verifier is called as `verified_by`: its `__name__`, else its class's.
pub(crate) fn callable_name(callable: &Bound<'_, PyAny>) -> String {
    callable
        .getattr("__name__")
        .or_else(|_| callable.get_type().getattr("__name__"))
        .and_then(|name| name.extract::<String>())
        .unwrap_or_else(|_| "verifier".to_owned())
}
