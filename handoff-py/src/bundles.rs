//! `handoff_core.Bundle`, `ImportReport`, `TrustedKey`, `TaskReplay` and `TaskComparison`:
//! what the bundle, replay and comparison operations return (DESIGN §9). Each is a read-only
//! view of the core's value with one property per field and `to_dict()`; a bundle's
//! `to_json()` is its portable form, which `import_bundle` reads in this store or another.
//! `generate_bundle_key()` makes the key pair that signs bundles (`BundleKeyPair`, whose
//! `repr` hides the secret key).

use chrono::{DateTime, Utc};
use handoff_core::{bundle, replay, store};
use pyo3::prelude::*;

use crate::convert::{opt_repr, py_repr, to_py};
use crate::curation::{Conversation, Fact};
use crate::errors::Result;
use crate::tasks::word;

/// A knowledge bundle: a task's or a branch's verified knowledge, shareable by token.
#[pyclass(module = "handoff_core", name = "Bundle", frozen)]
pub struct Bundle {
    inner: store::Bundle,
}

impl Bundle {
    pub(crate) fn new(inner: store::Bundle) -> Bundle {
        Bundle { inner }
    }

    /// The portable JSON, as `to_json` gives it.
    pub(crate) fn portable(&self) -> PyResult<String> {
        self.inner
            .to_json()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }
}

#[pymethods]
impl Bundle {
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    #[getter]
    fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }
    /// `task_export`, `curated` or `template`.
    #[getter]
    fn bundle_type(&self) -> String {
        word(&self.inner.bundle_type)
    }
    #[getter]
    fn source_task_id(&self) -> Option<&str> {
        self.inner.source_task_id.as_deref()
    }
    #[getter]
    fn source_branch(&self) -> Option<&str> {
        self.inner.source_branch.as_deref()
    }
    #[getter]
    fn fact_count(&self) -> u64 {
        self.inner.fact_count
    }
    #[getter]
    fn conversation_count(&self) -> u64 {
        self.inner.conversation_count
    }
    #[getter]
    fn message_count(&self) -> u64 {
        self.inner.message_count
    }
    /// `verified` when everything in it was verified, else `draft`.
    #[getter]
    fn verification_status(&self) -> String {
        word(&self.inner.verification_status)
    }
    #[getter]
    fn verification_score(&self) -> Option<f64> {
        self.inner.verification_score
    }
    #[getter]
    fn verified_by(&self) -> Option<&str> {
        self.inner.verified_by.as_deref()
    }
    /// `kb_` and 256 random bits: finds the bundle with `bundle_by_token`; `None` while it
    /// is private (sharing it issues a new one, making it private again kills it).
    #[getter]
    fn share_token(&self) -> Option<&str> {
        self.inner.share_token.as_deref()
    }
    /// `private`, `team` or `public`.
    #[getter]
    fn visibility(&self) -> String {
        word(&self.inner.visibility)
    }
    #[getter]
    fn tags(&self) -> Vec<String> {
        self.inner.tags.clone()
    }
    #[getter]
    fn content_hash(&self) -> &str {
        &self.inner.content_hash
    }
    #[getter]
    fn created_at(&self) -> DateTime<Utc> {
        self.inner.created_at
    }
    #[getter]
    fn updated_at(&self) -> DateTime<Utc> {
        self.inner.updated_at
    }

    /// The portable JSON (schema version, content hash, redacted unless made with
    /// `redact=False`), which `import_bundle` reads.
    fn to_json(&self) -> PyResult<String> {
        self.portable()
    }

    /// Every field as a `dict`, the portable form under `data` (with its `signature`, once
    /// `sign_bundle` signed it).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Bundle(id={}, name={}, visibility={}, fact_count={}, conversation_count={})",
            py_repr(&self.inner.id),
            py_repr(&self.inner.name),
            py_repr(&self.visibility()),
            self.inner.fact_count,
            self.inner.conversation_count
        )
    }
}

/// What an import added and what it found already there.
#[pyclass(module = "handoff_core", name = "ImportReport", frozen)]
pub struct ImportReport {
    inner: store::ImportReport,
}

impl ImportReport {
    pub(crate) fn new(inner: store::ImportReport) -> ImportReport {
        ImportReport { inner }
    }
}

#[pymethods]
impl ImportReport {
    /// The bundle's name.
    #[getter]
    fn bundle(&self) -> &str {
        &self.inner.bundle
    }
    #[getter]
    fn target_branch(&self) -> Option<&str> {
        self.inner.target_branch.as_ref().map(|b| b.as_str())
    }
    #[getter]
    fn facts_added(&self) -> u64 {
        self.inner.facts_added
    }
    #[getter]
    fn facts_skipped(&self) -> u64 {
        self.inner.facts_skipped
    }
    #[getter]
    fn conversations_added(&self) -> u64 {
        self.inner.conversations_added
    }
    #[getter]
    fn conversations_skipped(&self) -> u64 {
        self.inner.conversations_skipped
    }
    #[getter]
    fn messages_added(&self) -> u64 {
        self.inner.messages_added
    }
    /// The public key that signed the bundle (`ed25519:...`), `None` when it is not signed.
    #[getter]
    fn signed_by(&self) -> Option<&str> {
        self.inner.signed_by.as_deref()
    }
    /// Whether this store trusts that key (`trust_bundle_keys`): then the bundle's verdicts
    /// were taken as verified; otherwise its facts and conversations came in unverified, its
    /// verdicts kept as its claim (`verified_by: "bundle:sha256:..."`).
    #[getter]
    fn trusted(&self) -> bool {
        self.inner.trusted
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "ImportReport(bundle={}, target_branch={}, facts_added={}, facts_skipped={}, \
             conversations_added={}, conversations_skipped={}, signed_by={}, trusted={})",
            py_repr(&self.inner.bundle),
            opt_repr(self.target_branch()),
            self.inner.facts_added,
            self.inner.facts_skipped,
            self.inner.conversations_added,
            self.inner.conversations_skipped,
            opt_repr(self.signed_by()),
            if self.inner.trusted { "True" } else { "False" }
        )
    }
}

/// A public key the store trusts to vouch for bundles: `trust_bundle_keys` lists them.
#[pyclass(module = "handoff_core", name = "TrustedKey", frozen)]
pub struct TrustedKey {
    inner: store::TrustedKey,
}

impl TrustedKey {
    pub(crate) fn new(inner: store::TrustedKey) -> TrustedKey {
        TrustedKey { inner }
    }
}

#[pymethods]
impl TrustedKey {
    /// `ed25519:` and 64 hex digits.
    #[getter]
    fn public_key(&self) -> &str {
        &self.inner.public_key
    }
    /// When it was trusted.
    #[getter]
    fn trusted_at(&self) -> DateTime<Utc> {
        self.inner.trusted_at
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "TrustedKey(public_key={}, trusted_at={})",
            py_repr(&self.inner.public_key),
            py_repr(&self.inner.trusted_at.to_rfc3339())
        )
    }
}

/// A key pair for signing bundles, from `generate_bundle_key()`: `sign_bundle` takes the
/// secret key, the stores that are to take your bundles' verdicts trust the public key
/// (`trust_bundle_keys`). Keep the secret key as you would a password: its `repr` hides it.
#[pyclass(module = "handoff_core", name = "BundleKeyPair", frozen)]
pub struct BundleKeyPair {
    inner: bundle::BundleKeyPair,
}

#[pymethods]
impl BundleKeyPair {
    /// `ed25519:` and 64 hex digits: what a store trusts.
    #[getter]
    fn public_key(&self) -> &str {
        &self.inner.public_key
    }
    /// `ed25519-secret:` and 64 hex digits: what signs.
    #[getter]
    fn secret_key(&self) -> &str {
        &self.inner.secret_key
    }

    fn __repr__(&self) -> String {
        format!(
            "BundleKeyPair(public_key={}, secret_key=<hidden>)",
            py_repr(&self.inner.public_key)
        )
    }
}

/// A new key pair for signing bundles, from the operating system's random generator.
#[pyfunction]
pub fn generate_bundle_key() -> Result<BundleKeyPair> {
    Ok(BundleKeyPair {
        inner: bundle::BundleKeyPair::generate()?,
    })
}

/// A task's whole run: its timeline, its agents, its key knowledge and how it ended.
#[pyclass(module = "handoff_core", name = "TaskReplay", frozen)]
pub struct TaskReplay {
    inner: replay::TaskReplay,
}

impl TaskReplay {
    pub(crate) fn new(inner: replay::TaskReplay) -> TaskReplay {
        TaskReplay { inner }
    }
}

#[pymethods]
impl TaskReplay {
    #[getter]
    fn task_id(&self) -> &str {
        &self.inner.task_id
    }
    /// Every entry of the task's logs, oldest first: `{"at", "type", "agent", "summary",
    /// "data"}`.
    #[getter]
    fn timeline<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.timeline)
    }
    /// Each agent's contribution (`agent`, `role` when it joined the task with one,
    /// `handed_off`, `claimed`, `completed`, `failed`, `curated`, `first_at`, `last_at`).
    #[getter]
    fn agents<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.agents)
    }
    #[getter]
    fn key_facts(&self) -> Vec<Fact> {
        self.inner
            .key_facts
            .iter()
            .cloned()
            .map(Fact::new)
            .collect()
    }
    #[getter]
    fn key_conversations(&self) -> Vec<Conversation> {
        self.inner
            .key_conversations
            .iter()
            .cloned()
            .map(Conversation::new)
            .collect()
    }
    /// How it ended: `status`, `result`, `started_at`, `finished_at`, `duration_seconds`.
    #[getter]
    fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.outcome)
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "TaskReplay(task_id={}, timeline=<{} entries>, status={})",
            py_repr(&self.inner.task_id),
            self.inner.timeline.len(),
            py_repr(&self.inner.outcome.status)
        )
    }
}

/// Two runs side by side.
#[pyclass(module = "handoff_core", name = "TaskComparison", frozen)]
pub struct TaskComparison {
    inner: replay::TaskComparison,
}

impl TaskComparison {
    pub(crate) fn new(inner: replay::TaskComparison) -> TaskComparison {
        TaskComparison { inner }
    }
}

#[pymethods]
impl TaskComparison {
    #[getter]
    fn task_a(&self) -> &str {
        &self.inner.task_a
    }
    #[getter]
    fn task_b(&self) -> &str {
        &self.inner.task_b
    }
    /// `{"only_a", "only_b", "both"}` of the agents' names.
    #[getter]
    fn agents<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.agents)
    }
    /// `{"only_a", "only_b", "both"}` of the decisions recorded.
    #[getter]
    fn decision_points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.decision_points)
    }
    /// `{"only_a", "only_b", "both"}` of the key facts' texts.
    #[getter]
    fn facts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.facts)
    }
    #[getter]
    fn outcome_a<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.outcome_a)
    }
    #[getter]
    fn outcome_b<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.outcome_b)
    }

    /// Every field as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "TaskComparison(task_a={}, task_b={})",
            py_repr(&self.inner.task_a),
            py_repr(&self.inner.task_b)
        )
    }
}
