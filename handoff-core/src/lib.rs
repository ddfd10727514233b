#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The base, each module using only those listed before it: `clock`; `handoff::status` (a
// handoff's `Kind` and `Status`); `error` (the one error type); `validate` (the generic rules);
// `protocol`'s body and checks; `handoff::record` (the record and its own rules); then `chain`
// and `machine`. The feature folders build on them.
pub mod clock;
mod error;
pub mod redact;
pub mod schema;
mod trace;
#[cfg(feature = "uniffi")]
mod uniffi_types;
pub mod validate;

// The `uniffi` feature: the uniffi namespace its records and enums join, named for the binding
// that carries them (`handoff_core` is the Python wheel's module already).
#[cfg(feature = "uniffi")]
uniffi::setup_scaffolding!("handoff_ffi_core");

// One folder per feature: its pure part, its part of the `Store`, its operations.
pub mod bundle;
pub mod context;
pub mod curation;
mod handoff;
mod memory;
pub mod metrics;
pub mod protocol;
pub mod replay;
mod retention;
pub mod task;
pub mod tools;

// The store's heart (`Store`, `Backend`/`Tx`, the backends, the conformance suite) and the
// operation catalog.
pub mod ops;
pub mod store;

// The paths these modules had before they moved into their feature's folder.
pub use context::messages;
pub use handoff::{chain, machine, record, stats};
pub use task::plan;

pub use chain::{Chain, ChainPolicy, ChainRule, ChainViolation, Hop, NewHop};
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::{ContextBuilder, Packet};
pub use error::{Error, ErrorKind, Problem, Result};
pub use machine::{Change, Command, Event};
pub use record::{Handoff, Kind, Lifecycle, Metadata, NewHandoff, Reason, SCHEMA_VERSION, Status};
pub use redact::{Redaction, Redactor, redact};
pub use stats::PathStats;
#[cfg(feature = "sqlite")]
pub use store::sqlite::SqliteOptions;
pub use store::{
    Capabilities, CheckReport, Claim, ClaimRef, ClaimSecret, ConnectOptions, DEFAULT_LEASE, Damage,
    EventFilter, ListFilter, QueueCount, Store, Synchronous,
};
pub use tools::AgentFile;
pub use tools::{AgentRegistry, HandoffIntent, Provider};
pub use validate::{Limits, MAX_DEPTH};

/// The workspace's ARCHITECTURE.md, whose Rust examples `cargo test --doc` compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../../ARCHITECTURE.md")]
struct ArchitectureExamples;
