//! Node.js binding of [handoff-core](../handoff-core): the npm package `handoff-core`.
//!
//! All behaviour lives in the core. Each file here mirrors one core module and only converts:
//! JavaScript values in ([`convert`]), plain objects out, errors in one place ([`errors`]),
//! and the `*Async` variants onto libuv's thread pool ([`task`]). Every export catches panics.

pub mod bundles;
pub mod chain;
pub mod clock;
pub mod context;
pub mod convert;
pub mod curation;
pub mod errors;
pub mod lease;
pub mod machine;
pub mod memory;
pub mod ops;
pub mod protocol;
pub mod record;
pub mod replay;
pub mod session;
pub mod stats;
pub mod store;
pub mod task;
pub mod tasks;
pub mod tools;

/// Node's process leaves glibc's allocator slow for the many short-lived allocations a call
/// makes (`malloc_consolidate` and `_int_free` were a third of a lifecycle's time); mimalloc is
/// the allocator napi-rs recommends for addons.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
