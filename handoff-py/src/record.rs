//! `handoff_core.Handoff`: the core's record, read through attributes.

use chrono::{DateTime, Utc};
use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::convert::{Args, object_to_py, opt_repr, py_repr, to_py};
use crate::errors::Result;
use crate::validate::Limits;

/// A handover record. Fields are read-only attributes named as in the JSON form; times are
/// timezone-aware UTC `datetime`s and absent values are `None`.
#[pyclass(module = "handoff_core", name = "Handoff", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Handoff {
    pub(crate) inner: core::Handoff,
}

impl Handoff {
    pub(crate) fn new(inner: core::Handoff) -> Handoff {
        Handoff { inner }
    }
}

/// The text of a record's JSON form, from a `str` or UTF-8 `bytes` argument `s`.
fn json_text(s: &Bound<'_, PyAny>) -> Result<String> {
    if let Ok(bytes) = s.cast::<PyBytes>() {
        return match std::str::from_utf8(bytes.as_bytes()) {
            Ok(text) => Ok(text.to_owned()),
            Err(_) => Err(core::Error::invalid("s", "must be UTF-8 text").into()),
        };
    }
    let mut args = Args::new();
    let text = args.text("s", s);
    args.finish()?;
    Ok(text)
}

/// The record's times, which `to_dict` gives as `datetime`s rather than JSON strings.
fn times(h: &core::Handoff) -> [(&'static str, Option<DateTime<Utc>>); 5] {
    [
        ("created_at", Some(h.created_at)),
        ("expires_at", h.expires_at),
        ("lease_until", h.lease_until),
        ("heartbeat_at", h.heartbeat_at),
        ("completed_at", h.completed_at),
    ]
}

#[pymethods]
impl Handoff {
    /// Parses and validates a record from its JSON form (`str` or UTF-8 `bytes`), under
    /// `limits` (the default limits when `None`; pass a store's `limits` to read what it wrote).
    #[staticmethod]
    #[pyo3(signature = (s, *, limits=None))]
    fn from_json(s: &Bound<'_, PyAny>, limits: Option<&Bound<'_, Limits>>) -> Result<Handoff> {
        let text = json_text(s)?;
        let limits = limits.map(|l| l.get().inner.clone()).unwrap_or_default();
        Ok(Handoff::new(core::Handoff::from_json_with(&text, &limits)?))
    }

    /// Unpickles a record: what a store wrote, under its (possibly raised) limits, reads back.
    #[staticmethod]
    fn _unpickle(s: &Bound<'_, PyAny>) -> Result<Handoff> {
        let text = json_text(s)?;
        let limits = core::Limits {
            max_record_bytes: usize::MAX,
            max_field_bytes: usize::MAX,
            max_list_items: usize::MAX,
            max_depth: core::MAX_DEPTH,
        };
        Ok(Handoff::new(core::Handoff::from_json_with(&text, &limits)?))
    }

    /// The canonical JSON form (what `from_json` reads, in every language).
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Every field as a `dict` in JSON order, with `datetime`s for times.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = to_py(py, &self.inner)?.cast_into::<PyDict>()?;
        for (field, at) in times(&self.inner) {
            dict.set_item(field, at)?;
        }
        Ok(dict)
    }

    /// The record rendered for a successor's prompt, secrets redacted unless `redact=False`.
    #[pyo3(signature = (*, redact=true))]
    fn to_markdown(&self, redact: bool) -> String {
        if redact {
            self.inner.to_markdown()
        } else {
            self.inner.to_markdown_unredacted()
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Handoff(id={}, task_id={}, status={}, from_agent={}, to_agent={})",
            py_repr(&self.inner.id),
            py_repr(&self.inner.task_id),
            py_repr(self.inner.status.as_str()),
            opt_repr(self.inner.from_agent.as_deref()),
            opt_repr(self.inner.to_agent.as_deref()),
        )
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let from_json = py.get_type::<Handoff>().getattr("_unpickle")?;
        Ok((from_json, PyTuple::new(py, [self.inner.to_json()])?))
    }

    #[getter]
    fn schema_version(&self) -> u32 {
        self.inner.schema_version
    }
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn task_id(&self) -> &str {
        &self.inner.task_id
    }
    #[getter]
    fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }
    #[getter]
    fn parent_id(&self) -> Option<&str> {
        self.inner.parent_id.as_deref()
    }
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.as_str()
    }
    #[getter]
    fn reason(&self) -> String {
        self.inner.reason.to_string()
    }
    #[getter]
    #[allow(clippy::wrong_self_convention)] // the field's name, not a conversion
    fn from_agent(&self) -> Option<&str> {
        self.inner.from_agent.as_deref()
    }
    #[getter]
    fn to_agent(&self) -> Option<&str> {
        self.inner.to_agent.as_deref()
    }
    #[getter]
    fn goal(&self) -> &str {
        &self.inner.goal
    }
    #[getter]
    fn progress_summary(&self) -> &str {
        &self.inner.progress_summary
    }
    #[getter]
    fn completed_steps(&self) -> Vec<String> {
        self.inner.completed_steps.clone()
    }
    #[getter]
    fn pending_steps(&self) -> Vec<String> {
        self.inner.pending_steps.clone()
    }
    #[getter]
    fn key_decisions(&self) -> Vec<String> {
        self.inner.key_decisions.clone()
    }
    #[getter]
    fn assumptions(&self) -> Vec<String> {
        self.inner.assumptions.clone()
    }
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }
    #[getter]
    fn unresolved_errors(&self) -> Vec<String> {
        self.inner.unresolved_errors.clone()
    }
    #[getter]
    fn blockers(&self) -> Vec<String> {
        self.inner.blockers.clone()
    }
    #[getter]
    fn modified_files(&self) -> Vec<String> {
        self.inner.modified_files.clone()
    }
    #[getter]
    fn locked_files(&self) -> Vec<String> {
        self.inner.locked_files.clone()
    }
    #[getter]
    fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }
    #[getter]
    fn priority_items(&self) -> Vec<String> {
        self.inner.priority_items.clone()
    }
    #[getter]
    fn success_criteria(&self) -> Vec<String> {
        self.inner.success_criteria.clone()
    }
    #[getter]
    fn context_usage_percent(&self) -> Option<u8> {
        self.inner.context_usage_percent
    }
    /// A fresh `dict` on every access: changing it does not change the record.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        object_to_py(py, &self.inner.metadata)
    }
    /// A manager/worker protocol message's body (the seed's field names), or `None`. A fresh
    /// `dict` on every access.
    #[getter]
    fn protocol<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .protocol
            .as_ref()
            .map(|body| to_py(py, body))
            .transpose()
    }
    #[getter]
    fn created_at(&self) -> DateTime<Utc> {
        self.inner.created_at
    }
    #[getter]
    fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.inner.expires_at
    }
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }
    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status.as_str()
    }
    #[getter]
    fn claimed_by(&self) -> Option<&str> {
        self.inner.claimed_by.as_deref()
    }
    #[getter]
    fn claim_token(&self) -> Option<u64> {
        self.inner.claim_token
    }
    #[getter]
    fn lease_until(&self) -> Option<DateTime<Utc>> {
        self.inner.lease_until
    }
    #[getter]
    fn heartbeat_at(&self) -> Option<DateTime<Utc>> {
        self.inner.heartbeat_at
    }
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    #[getter]
    fn completed_at(&self) -> Option<DateTime<Utc>> {
        self.inner.completed_at
    }
    #[getter]
    fn outcome(&self) -> Option<&str> {
        self.inner.outcome.as_deref()
    }
    /// Which pending handoff `claim_next` takes first: the highest, then the oldest.
    #[getter]
    fn priority(&self) -> i32 {
        self.inner.priority
    }
    /// What the holder last reported with a heartbeat (a small JSON value), or `None`. A fresh
    /// value on every access.
    #[getter]
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .progress
            .as_ref()
            .map(|value| to_py(py, value))
            .transpose()
    }
    /// The creator's W3C `traceparent`, under which a successor starts its span.
    #[getter]
    fn traceparent(&self) -> Option<&str> {
        self.inner.traceparent.as_deref()
    }
    /// The vendor part of the creator's W3C trace context, carried with `traceparent`.
    #[getter]
    fn tracestate(&self) -> Option<&str> {
        self.inner.tracestate.as_deref()
    }
}
