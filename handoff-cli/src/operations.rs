//! The store operations as the CLI and the MCP server expose them (DESIGN §15): one entry per
//! operation of the core's catalog ([`handoff_core::ops`]), from which both `handoff
//! <operation>` (`handoff <group> <verb>`) and the `handoff_<operation>` (`<group>_<verb>`)
//! tool are derived. The entry says only what the
//! core's description does not: how the operation uses the store.

use std::sync::OnceLock;
use std::time::Duration;

use handoff_core::ops::{self, Arguments, Operation, OperationInfo};
use handoff_core::{Error, Limits, Problem, Result, Store};
use serde_json::{Value, json};

use crate::results::Shown;

/// Every store operation the faces derive from the catalog, in its order. A new operation
/// costs one line here; a new result type also one `Shown` implementation in `results.rs`.
///
/// `backup` and `restore` are left out: `handoff backup` and `handoff restore` are written by
/// hand (they name the store and the file in their output), and there is no MCP tool, since a
/// model must not choose where an unredacted copy of the whole store is written, nor replace
/// a store's content with a file of its choosing.
fn entries() -> Vec<Op> {
    vec![
        Op::creates::<ops::Create>(),
        Op::creates::<ops::CreateMany>(),
        Op::reads::<ops::Get>(),
        Op::reads::<ops::List>(),
        Op::writes::<ops::Claim>(),
        Op::writes::<ops::ClaimNext>(),
        Op::writes::<ops::Heartbeat>(),
        Op::writes::<ops::Release>(),
        Op::writes::<ops::Fail>(),
        Op::writes::<ops::Complete>(),
        Op::writes::<ops::Reject>(),
        Op::writes::<ops::Cancel>(),
        Op::writes::<ops::CancelClaim>(),
        Op::reads::<ops::Events>(),
        Op::reads::<ops::Chain>(),
        Op::writes::<ops::Checkpoint>(),
        Op::reads::<ops::Stalled>(),
        Op::reads::<ops::Stats>(),
        Op::reads::<ops::QueueCounts>(),
        Op::writes::<ops::Reap>(),
        Op::writes::<ops::Check>(),
        Op::reads::<ops::Capabilities>(),
        Op::creates::<ops::CreateTask>(),
        Op::writes::<ops::StartTask>(),
        Op::reads::<ops::GetTask>(),
        Op::reads::<ops::ListTasks>(),
        Op::writes::<ops::UpdateTask>(),
        Op::writes::<ops::PauseTask>(),
        Op::writes::<ops::ResumeTask>(),
        Op::writes::<ops::CancelTask>(),
        Op::writes::<ops::JoinTask>(),
        Op::writes::<ops::CompleteTask>(),
        Op::writes::<ops::FailTask>(),
        Op::writes::<ops::EscalateStep>(),
        Op::creates::<ops::RerunTask>(),
        Op::writes::<ops::FailStep>(),
        Op::writes::<ops::ResolveEscalation>(),
        Op::reads::<ops::TaskEvents>(),
        Op::reads::<ops::TaskHistory>(),
        Op::reads::<ops::TaskStatistics>(),
        Op::writes::<ops::Prune>(),
        Op::reads::<ops::MemoryGet>(),
        Op::creates::<ops::MemoryPut>(),
        Op::reads::<ops::MemoryList>(),
        Op::writes::<ops::MemoryDelete>(),
        Op::reads::<ops::Session>(),
        Op::creates::<ops::Initialize>(),
        Op::writes::<ops::Report>(),
        Op::writes::<ops::Decide>(),
        Op::writes::<ops::ReportError>(),
        Op::writes::<ops::Recover>(),
        Op::writes::<ops::Escalate>(),
        Op::writes::<ops::Resolve>(),
        Op::reads::<ops::ProtocolRun>(),
        Op::reads::<ops::ProtocolHistory>(),
        Op::reads::<ops::ProtocolStats>(),
        Op::creates::<ops::AddConversation>(),
        Op::writes::<ops::AppendMessages>(),
        Op::reads::<ops::GetConversation>(),
        Op::reads::<ops::Messages>(),
        Op::reads::<ops::ListConversations>(),
        Op::writes::<ops::CherryPick>(),
        Op::writes::<ops::CherryPickDecisions>(),
        Op::writes::<ops::CherryPickTools>(),
        Op::writes::<ops::CherryPickToFacts>(),
        Op::creates::<ops::AddFacts>(),
        Op::reads::<ops::Facts>(),
        Op::reads::<ops::Branches>(),
        Op::writes::<ops::Verify>(),
        Op::writes::<ops::Merge>(),
        Op::reads::<ops::ContextFor>(),
        Op::reads::<ops::CurationEvents>(),
        Op::creates::<ops::CreateBundle>(),
        Op::reads::<ops::GetBundle>(),
        Op::reads::<ops::ListBundles>(),
        Op::reads::<ops::BundleByToken>(),
        Op::writes::<ops::SetVisibility>(),
        Op::writes::<ops::SignBundle>(),
        Op::writes::<ops::TrustBundleKeys>(),
        Op::writes::<ops::DeleteBundle>(),
        Op::creates::<ops::ImportBundle>(),
        Op::writes::<ops::VerifyBundle>(),
        Op::reads::<ops::Replay>(),
        Op::reads::<ops::Compare>(),
    ]
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

/// The wait a call asks for (`claim_next`'s `wait_seconds`), which the servers run in slices:
/// a positive, finite number of seconds. Anything else goes to the core whole, to answer or
/// report.
pub(crate) fn asked_wait(args: &serde_json::Map<String, Value>) -> Option<Duration> {
    let seconds = args.get("wait_seconds")?.as_f64()?;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|wait| !wait.is_zero())
}

/// Values the faces supplied before the core required them, still supplied by the CLI and for
/// the MCP tools' first spelling: (operation, argument, value).
pub(crate) const DEFAULTS: &[(&str, &str, &str)] = &[("release", "reason", "released")];

/// How an operation uses the store, which decides how the faces open it and show its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Only reads: the CLI opens the store read-only and never creates it, the MCP tool is
    /// marked read-only, and a record it returns is shown whole (its Markdown DNA).
    Reads,
    /// Changes an existing store; a missing one is an error.
    Writes,
    /// May create the store.
    Creates,
}

/// An operation of the catalog, with what the faces need to run it without its types.
pub(crate) struct Op {
    pub info: OperationInfo,
    pub access: Access,
    read: fn(Value, &Limits) -> Result<()>,
    call: fn(&Store, Value) -> Result<Box<dyn Shown>>,
}

fn read<O: Operation>(args: Value, limits: &Limits) -> Result<()> {
    O::Args::read(args, limits).map(drop)
}

fn call<O>(store: &Store, args: Value) -> Result<Box<dyn Shown>>
where
    O: Operation,
    O::Output: Shown + 'static,
{
    Ok(Box::new(O::call(store, args)?))
}

impl Op {
    fn new<O>(access: Access) -> Op
    where
        O: Operation,
        O::Output: Shown + 'static,
    {
        Op {
            info: OperationInfo::of::<O>(),
            access,
            read: read::<O>,
            call: call::<O>,
        }
    }

    fn reads<O: Operation<Output: Shown + 'static>>() -> Op {
        Op::new::<O>(Access::Reads)
    }

    fn writes<O: Operation<Output: Shown + 'static>>() -> Op {
        Op::new::<O>(Access::Writes)
    }

    fn creates<O: Operation<Output: Shown + 'static>>() -> Op {
        Op::new::<O>(Access::Creates)
    }

    pub(crate) fn name(&self) -> &'static str {
        self.info.name
    }

    /// Whether it may create the store (and, over HTTP, answers `201 Created`).
    pub(crate) fn may_create(&self) -> bool {
        self.access == Access::Creates
    }

    pub(crate) fn reads_only(&self) -> bool {
        self.access == Access::Reads
    }

    /// Reads `args` under `limits` without running anything: every problem at once.
    pub(crate) fn check(&self, args: &Value, limits: &Limits) -> Result<()> {
        (self.read)(args.clone(), limits)
    }

    /// Reads `args` and runs the operation on `store`.
    pub(crate) fn call(&self, store: &Store, args: Value) -> Result<Box<dyn Shown>> {
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

    /// Whether it returns a claim, on which a successor may be started.
    pub(crate) fn returns_claim(&self) -> bool {
        self.info.returns.starts_with("Claim")
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

    /// Catalog operations the faces expose their own way (see [`entries`]).
    const OWN_WAY: &[&str] = &["backup", "restore"];

    #[test]
    fn every_catalog_operation_has_an_entry_in_order() {
        let derived: Vec<&str> = all().iter().map(Op::name).collect();
        let catalog: Vec<&str> = ops::catalog()
            .iter()
            .map(|op| op.name)
            .filter(|name| !OWN_WAY.contains(name))
            .collect();
        assert_eq!(derived, catalog);
    }
}
