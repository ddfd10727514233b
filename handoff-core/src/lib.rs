#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent_files;
pub mod bundle;
pub mod chain;
pub mod clock;
pub mod context;
pub mod curation;
mod error;
pub mod machine;
mod markdown;
pub mod messages;
pub mod ops;
pub mod plan;
pub mod protocol;
pub mod record;
pub mod redact;
mod relevance;
pub mod replay;
pub mod schema;
pub mod stats;
pub mod store;
pub mod task;
pub mod tools;
#[cfg(feature = "uniffi")]
mod uniffi_types;
pub mod validate;

// The `uniffi` feature: the uniffi namespace its records and enums join, named for the binding
// that carries them (`handoff_core` is the Python wheel's module already).
#[cfg(feature = "uniffi")]
uniffi::setup_scaffolding!("handoff_ffi_core");

pub use agent_files::AgentFile;
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
pub use tools::{AgentRegistry, HandoffIntent, Provider};
pub use validate::{Limits, MAX_DEPTH};

/// The workspace's ARCHITECTURE.md, whose Rust examples `cargo test --doc` compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../../ARCHITECTURE.md")]
struct ArchitectureExamples;
