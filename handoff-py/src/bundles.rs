//! `handoff_core.Bundle`: what the bundle operations return, a read-only view of the core's
//! value with one property per field and `to_dict()`; its `to_json()` is its portable form,
//! which `import_bundle` reads in this store or another (the other results of bundles,
//! replays and comparisons are generated records, `handoff_core._records`).
//! `generate_bundle_key()` makes the key pair that signs bundles (`BundleKeyPair`, whose
//! `repr` hides the secret key).

use chrono::{DateTime, Utc};
use handoff_core::{bundle, store};
use pyo3::prelude::*;

use crate::convert::{py_repr, to_py};
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
