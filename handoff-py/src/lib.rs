//! The Python binding of handoff-core: the extension module `handoff_core._native`, wrapped
//! by the pure-Python package `handoff_core` (see `python/handoff_core`).
//!
//! Every file mirrors one core module and only converts: arguments to JSON that the core's
//! argument types read (`ops.rs`; bad types and values are `ValidationError`s that name the
//! argument, the same problems every face reports), results to Python objects (hand-written
//! classes only for types with behaviour; the plain records are generated from the catalog's
//! result schemas, `handoff_core._records`, and read the result's JSON), core errors to
//! exceptions (in `errors::to_py`, the one mapping function). Every call that reaches the
//! storage backend runs with the GIL released.

use pyo3::prelude::*;

mod bundles;
mod chain;
mod clock;
mod context;
mod convert;
mod curation;
mod errors;
mod lease;
mod machine;
mod ops;
mod record;
mod redact;
mod store;
mod tasks;
mod tools;
mod validate;

/// Inside the Python process glibc's allocator is slow for the many short-lived allocations a
/// call makes: `malloc_consolidate`, `unlink_chunk` and `free` were a third of an in-memory
/// lifecycle's time under `perf`. mimalloc serves the extension's own allocations (Python's
/// objects keep Python's allocator), as in the Node addon.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The compiled half of `handoff_core`; import `handoff_core` instead.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<record::Handoff>()?;
    m.add_class::<store::Store>()?;
    m.add_class::<store::Claim>()?;
    m.add_class::<store::ClaimRef>()?;
    m.add_class::<machine::Event>()?;
    m.add_class::<chain::Chain>()?;
    m.add_class::<chain::Hop>()?;
    m.add_class::<chain::ChainPolicy>()?;
    m.add_class::<clock::ManualClock>()?;
    m.add_class::<validate::Limits>()?;
    m.add_class::<tasks::Task>()?;
    m.add_class::<tasks::TaskSummary>()?;
    m.add_class::<tasks::Session>()?;
    m.add_class::<bundles::Bundle>()?;
    m.add_class::<bundles::BundleKeyPair>()?;
    m.add_function(wrap_pyfunction!(bundles::generate_bundle_key, m)?)?;
    m.add_class::<lease::Lease>()?;
    m.add_class::<redact::Redaction>()?;
    m.add_class::<redact::Redactor>()?;
    m.add_function(wrap_pyfunction!(redact::redact, m)?)?;
    m.add_class::<context::ContextBuilder>()?;
    m.add_class::<context::Packet>()?;
    m.add_class::<context::Manifest>()?;
    m.add_class::<tools::AgentRegistry>()?;
    m.add_class::<tools::Agent>()?;
    m.add_class::<tools::HandoffIntent>()?;
    m.add_function(wrap_pyfunction!(store::open, m)?)?;
    m.add_function(wrap_pyfunction!(store::connect, m)?)?;
    // Private (for the stub generator): set, not added, so that it stays out of `__all__`.
    m.setattr("_catalog_json", wrap_pyfunction!(ops::catalog_json, m)?)?;
    m.add("SCHEMA_VERSION", handoff_core::SCHEMA_VERSION)?;
    m.add("MAX_DEPTH", handoff_core::MAX_DEPTH)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
