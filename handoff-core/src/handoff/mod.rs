//! Handoffs, the core feature: the record a predecessor leaves and its rules ([`record`]), the
//! words of its state (`status`: its kind and status, at the base of the crate so that the
//! error type can name them), the state machine of its lifecycle ([`machine`]), the chain of
//! hops a task took and the policy that guards it ([`chain`]), path statistics from the event
//! log ([`stats`]), the claim that proves who holds a handoff and the lease that keeps it
//! (`claim`, `lease`), and the operations the faces call (`ops`). The `Store` methods that run
//! the lifecycle (`create`, `claim`, `complete`, ...) are the store's heart, which every
//! feature's store part builds on: they live in `store/mod.rs` and `store/waiting.rs`.

pub mod chain;
pub(crate) mod claim;
pub(crate) mod lease;
pub mod machine;
pub(crate) mod ops;
pub mod record;
pub mod stats;
pub(crate) mod status;
