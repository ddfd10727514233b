//! Node.js binding of [handoff-core](../handoff-core): the npm package `handoff-core`.
//!
//! All behaviour lives in the core. This face only converts: JavaScript values in
//! ([`convert`], [`ops`]), results out as the core's JSON in camelCase ([`output`]), errors in
//! one place ([`errors`]), and the `*Async` variants onto libuv's thread pool ([`run`]). The
//! store's methods come from the core's catalog (index.js, methods.js); what is written here
//! by hand takes a callable or has state of its own. Every export catches panics.

pub mod bundles;
pub mod clock;
pub mod context;
pub mod convert;
pub mod curation;
pub mod errors;
pub mod lease;
pub mod machine;
pub mod memory;
pub mod ops;
pub mod output;
pub mod record;
pub mod run;
pub mod store;
pub mod tools;

/// Node's process leaves glibc's allocator slow for the many short-lived allocations a call
/// makes (`malloc_consolidate` and `_int_free` were a third of a lifecycle's time); mimalloc is
/// the allocator napi-rs recommends for addons.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
