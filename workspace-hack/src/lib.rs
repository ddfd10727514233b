//! No code: this crate's dependencies turn on one feature set for the crates the workspace's
//! builds share (see Cargo.toml and README.md).
