//! The operations of memory and sessions: `memory_get`, `memory_put`, `memory_list`,
//! `memory_delete` and `session`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::ops::{Access, Arguments, Operation};
use crate::record::Metadata;
use crate::store::{self, Store};

/// The memory of `scope` (`agent:writer`, `session:s1`, `shared`, ...) with its version;
/// nothing when none was written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryGetArgs {
    /// The scope (an id: `[A-Za-z0-9._:@-]{1,128}`).
    pub scope: String,
}

impl Arguments for MemoryGetArgs {}

/// The `memory_get` operation.
pub struct MemoryGet;

impl Operation for MemoryGet {
    const NAME: &'static str = "memory_get";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("memory", "get"));
    const POSITIONAL: &'static [&'static str] = &["scope"];
    type Args = MemoryGetArgs;
    type Output = Option<store::Memory>;

    fn run(store: &Store, args: MemoryGetArgs) -> Result<Option<store::Memory>> {
        store.memory_get(&args.scope)
    }
}

/// Writes the memory of `scope`. With `expected_version` (0: nothing written yet) the write
/// happens only if the scope is still at that version, else `CONFLICT` naming both versions.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryPutArgs {
    /// The scope (an id: `[A-Za-z0-9._:@-]{1,128}`).
    pub scope: String,
    /// The document: a JSON object, within the record limits' size and depth.
    pub value: Metadata,
    /// The version the caller read (0: nothing written yet).
    #[serde(default)]
    pub expected_version: Option<u64>,
}

impl Arguments for MemoryPutArgs {}

/// The `memory_put` operation.
pub struct MemoryPut;

impl Operation for MemoryPut {
    const NAME: &'static str = "memory_put";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("memory", "put"));
    const POSITIONAL: &'static [&'static str] = &["scope", "value", "expected_version"];
    type Args = MemoryPutArgs;
    type Output = store::Memory;

    fn run(store: &Store, args: MemoryPutArgs) -> Result<store::Memory> {
        store.memory_put(&args.scope, args.value, args.expected_version)
    }
}

/// Every scope's memory whose scope starts with `prefix` (all without one), in scope order.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryListArgs {
    /// Only scopes that start with this (`agent:`).
    #[serde(default)]
    pub prefix: Option<String>,
}

impl Arguments for MemoryListArgs {}

/// The `memory_list` operation.
pub struct MemoryList;

impl Operation for MemoryList {
    const NAME: &'static str = "memory_list";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("memory", "list"));
    const POSITIONAL: &'static [&'static str] = &["prefix"];
    type Args = MemoryListArgs;
    type Output = Vec<store::Memory>;

    fn run(store: &Store, args: MemoryListArgs) -> Result<Vec<store::Memory>> {
        store.memory_list(args.prefix.as_deref())
    }
}

/// Forgets the memory of `scope`; with `expected_version`, only if it is still at it
/// (`CONFLICT` otherwise). Whether there was anything to forget.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryDeleteArgs {
    /// The scope.
    pub scope: String,
    /// The version the caller read.
    #[serde(default)]
    pub expected_version: Option<u64>,
}

impl Arguments for MemoryDeleteArgs {}

/// The `memory_delete` operation.
pub struct MemoryDelete;

impl Operation for MemoryDelete {
    const NAME: &'static str = "memory_delete";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("memory", "delete"));
    const POSITIONAL: &'static [&'static str] = &["scope", "expected_version"];
    type Args = MemoryDeleteArgs;
    type Output = bool;

    fn run(store: &Store, args: MemoryDeleteArgs) -> Result<bool> {
        store.memory_delete(&args.scope, args.expected_version)
    }
}

/// Who currently owns a conversation (the holder of its latest handoff once taken, else its
/// sender), its handoffs as hops, and its shared context (the memory `session:<id>`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// The session, as handoffs name it in `session_id`.
    pub session_id: String,
}

impl Arguments for SessionArgs {}

/// The `session` operation.
pub struct Session;

impl Operation for Session {
    const NAME: &'static str = "session";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("session", "get"));
    const POSITIONAL: &'static [&'static str] = &["session_id"];
    type Args = SessionArgs;
    type Output = store::Session;

    fn run(store: &Store, args: SessionArgs) -> Result<store::Session> {
        store.session(&args.session_id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn memory_compare_and_swap_through_the_operations() {
        let store = Store::memory();
        let put = json!({"scope": "shared", "value": {"n": 1}, "expected_version": 0});
        assert_eq!(MemoryPut::call(&store, put.clone()).unwrap().version, 1);
        let err = MemoryPut::call(&store, put).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Conflict);
        let bad = MemoryPut::call(&store, json!({"scope": "bad scope", "value": []})).unwrap_err();
        let fields: Vec<_> = bad.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["value"]);
        assert!(MemoryDelete::call(&store, json!({"scope": "shared"})).unwrap());
        assert!(
            MemoryGet::call(&store, json!({"scope": "shared"}))
                .unwrap()
                .is_none()
        );
    }
}
