//! The store operations as the CLI, the MCP server and `handoff serve` expose them (docs/design.md
//! §15): the core's catalog ([`handoff_core::ops::catalog`]), from which `handoff <operation>`
//! (`handoff <group> <verb>`), the `handoff_<operation>` (`<group>_<verb>`) tool and the HTTP
//! route are derived, with how each uses the store (`access`) and what it returns (`result`).

use std::sync::OnceLock;
use std::time::Duration;

use handoff_core::ops::{self, Access, Arguments, Operation, OperationInfo};
use handoff_core::{Error, Limits, Problem, Result, Store};
use serde_json::{Map, Value, json};

use crate::results::Outcome;

/// Catalog operations the faces expose their own way, with why: `handoff backup` and `handoff
/// restore` are written by hand (they name the store and the file in their output), and
/// there is no MCP tool or route, since a caller must not choose where an unredacted copy of
/// the whole store is written, nor replace a store's content with a file of its choosing.
pub(crate) const OWN_WAY: &[&str] = &["backup", "restore"];

/// Runs an operation from JSON arguments.
type Caller = fn(&Store, Value) -> Result<Outcome>;
/// Reads an operation's arguments without running it.
type Reader = fn(Value, &Limits) -> Result<()>;

fn call<O: Operation>(store: &Store, args: Value) -> Result<Outcome> {
    Ok(Outcome::new(O::call(store, args)?))
}

fn read<O: Operation>(args: Value, limits: &Limits) -> Result<()> {
    O::Args::read(args, limits).map(drop)
}

/// What the CLI makes of each operation of the core's one list ([`ops::each`]): its
/// description, and how to run it and read its arguments (for which Rust needs its type).
struct Entries;

impl ops::Visitor for Entries {
    type Out = Op;
    fn visit<O: Operation>(&mut self) -> Op {
        Op {
            info: OperationInfo::of::<O>(),
            call: call::<O>,
            read: read::<O>,
        }
    }
}

/// Every operation of the catalog but [`OWN_WAY`]'s, in its order.
fn entries() -> Vec<Op> {
    ops::each(&mut Entries)
        .into_iter()
        .filter(|op| !OWN_WAY.contains(&op.info.name))
        .collect()
}

/// The most items a list answer holds at once: the CLI reads long lists in pages of this many,
/// and an MCP tool answers with at most this many (and the cursor of the next page).
pub(crate) const PAGE: usize = 1000;

/// An answer holds a page at most: caps `limit` at [`PAGE`] and returns the page's size. A
/// `limit` that is not a count is left for the core to report.
pub(crate) fn cap_to_a_page(args: &mut serde_json::Map<String, Value>) -> usize {
    let page = match args.get("limit") {
        None | Some(Value::Null) => PAGE,
        Some(limit) => match limit.as_u64() {
            Some(n) => usize::try_from(n).map_or(PAGE, |n| n.min(PAGE)),
            None => return PAGE,
        },
    };
    args.insert("limit".to_owned(), json!(page));
    page
}

/// How long a server's waiting call runs on the store before it asks again whether its
/// caller still wants it.
const WAIT_SLICE: Duration = Duration::from_secs(1);

/// Whether a call waits for work: `claim_next` with a positive `wait_seconds`. A wait that is
/// not a number of seconds goes to the core to report.
pub(crate) fn waits(op: &Op, args: &Map<String, Value>) -> bool {
    op.name() == ops::ClaimNext::NAME
        && args
            .get("wait_seconds")
            .and_then(Value::as_f64)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .is_some_and(|wait| !wait.is_zero())
}

/// Runs a waiting `claim_next` for `max` at most, a slice at a time, until it has claimed, its
/// wait is over or `stop` says its caller no longer wants it.
pub(crate) fn claim_waiting(
    store: &Store,
    args: Map<String, Value>,
    max: Duration,
    stop: &mut dyn FnMut() -> bool,
) -> Result<Outcome> {
    let mut args = ops::ClaimNextArgs::read(Value::Object(args), store.limits())?;
    args.wait_seconds = args.wait_seconds.map(|s| s.min(max.as_secs_f64()));
    Ok(Outcome::new(
        store.claim_next_waiting(args, WAIT_SLICE, stop)?,
    ))
}

/// Values the faces supplied before the core required them, still supplied by the CLI and for
/// the MCP tools' first spelling: (operation, argument, value).
pub(crate) const DEFAULTS: &[(&str, &str, &str)] = &[("release", "reason", "released")];

/// An operation of the catalog, with what the faces need to run it without its types.
pub(crate) struct Op {
    pub info: OperationInfo,
    read: Reader,
    call: Caller,
}

impl Op {
    pub(crate) fn name(&self) -> &'static str {
        self.info.name
    }

    /// Whether it may create the store (and, over HTTP, answers `201 Created`).
    pub(crate) fn may_create(&self) -> bool {
        self.info.access == Access::Creates
    }

    /// Whether it only reads: the CLI opens the store read-only and never creates it, and the
    /// MCP tool is marked read-only.
    pub(crate) fn reads_only(&self) -> bool {
        self.info.access == Access::Reads
    }

    /// Reads `args` under `limits` without running anything: every problem at once.
    pub(crate) fn check(&self, args: &Value, limits: &Limits) -> Result<()> {
        (self.read)(args.clone(), limits)
    }

    /// Reads `args` and runs the operation on `store`.
    pub(crate) fn call(&self, store: &Store, args: Value) -> Result<Outcome> {
        (self.call)(store, args)
    }

    /// The schema of the argument `name`, if the operation takes one.
    pub(crate) fn argument(&self, name: &str) -> Option<&Value> {
        self.info.arguments.get("properties")?.get(name)
    }

    /// Whether the operation returns a list a page at a time: it takes a `limit` and an
    /// `after` cursor.
    pub(crate) fn is_paged(&self) -> bool {
        self.argument("limit").is_some() && self.argument("after").is_some()
    }

    /// Whether it returns a claim (or may), on which a successor may be started.
    pub(crate) fn returns_claim(&self) -> bool {
        let claim = |node: &Value| node.get("$ref").is_some_and(|r| r == "#/$defs/Claim");
        let result = &self.info.result;
        claim(result)
            || result
                .get("anyOf")
                .and_then(Value::as_array)
                .is_some_and(|alternatives| alternatives.iter().any(claim))
    }
}

/// Every operation the faces derive.
pub(crate) fn all() -> &'static [Op] {
    static ALL: OnceLock<Vec<Op>> = OnceLock::new();
    ALL.get_or_init(entries)
}

/// The operation named `name` (the catalog's name, `claim_next`).
pub(crate) fn find(name: &str) -> Option<&'static Op> {
    all().iter().find(|op| op.name() == name)
}

/// A claim given flat (the CLI's `--token` and `--secret`, or the MCP tools' first spelling)
/// has its problems named by its own fields (`secret`), the way the caller gave them, rather
/// than by their place in the arguments (`claim.secret`).
pub(crate) fn name_flat_claim(err: Error) -> Error {
    match err {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .into_iter()
                .map(|p| match p.field.strip_prefix("claim.") {
                    Some(field) => Problem::new(field, p.rule),
                    None => p,
                })
                .collect(),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_operation_but_their_own_ways_is_run_in_order() {
        let derived: Vec<&str> = all().iter().map(Op::name).collect();
        let catalog: Vec<&str> = ops::catalog()
            .iter()
            .map(|op| op.name)
            .filter(|name| !OWN_WAY.contains(name))
            .collect();
        assert_eq!(derived, catalog);
        assert!(find("claim_next").is_some_and(Op::returns_claim));
        assert!(find("claim").is_some_and(Op::returns_claim));
        assert!(!find("get").is_some_and(Op::returns_claim));
    }
}
