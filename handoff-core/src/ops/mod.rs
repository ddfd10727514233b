//! One description per operation (docs/design.md §15).
//!
//! Each store operation is a type implementing [`Operation`]: its name, the arguments a caller
//! may give positionally, what it returns, and its argument type, a serde + schemars struct
//! whose field names, docs and defaults are the ones every face shows. The faces derive from
//! it: Python and Node turn their native values into JSON and read them with [`Arguments::read`]
//! (so every face reports the same [`Problem`]s), the MCP server and the CLI build their tools and
//! subcommands from [`catalog`], and the Python stubs are generated from it.
//!
//! Adding an operation: write the store method, then its argument struct and `Operation` impl
//! in its feature's `ops.rs` (`task/ops.rs`, `curation/ops.rs`, ...), re-exported here, and add
//! it to [`catalog`]; ARCHITECTURE.md lists the one line each face adds. This module keeps what
//! every operation shares: the traits, the catalog, and reading arguments (`parse`).
//!
//! ```
//! use handoff_core::ops::{self, Operation};
//! use handoff_core::Store;
//! use serde_json::json;
//!
//! let store = Store::memory();
//! let h = ops::Create::call(&store, json!({"task_id": "t1", "goal": "Fix the login bug",
//!                                          "completed": ["reproduced"]}))?;
//! assert_eq!(h.completed_steps, ["reproduced"]);
//!
//! // Bad input: every problem at once, named by the argument names.
//! let err = ops::Create::call(&store, json!({"task_id": "t1", "goal": "", "completed": [1]}))
//!     .unwrap_err();
//! let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
//! assert_eq!(fields, ["completed[0]", "goal"]);
//! # Ok::<(), handoff_core::Error>(())
//! ```

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Problem, Result};
use crate::store::Store;
use crate::validate::Limits;

mod connect;
mod parse;

// Each feature's operations live in the feature's folder (`task/ops.rs`, ...); the catalog
// names them all here, under the paths the faces use.
pub use crate::bundle::ops::*;
pub use crate::context::ops::*;
pub use crate::curation::ops::*;
pub use crate::handoff::ops::*;
pub use crate::memory::ops::*;
pub use crate::metrics::ops::*;
pub use crate::protocol::ops::*;
pub use crate::replay::ops::*;
pub use crate::retention::ops::*;
pub use crate::task::ops::*;
pub use crate::tools::ops::{
    AgentArgs, ContextArgs, ContextItemArgs, DEFAULT_BUDGET_TOKENS, DetectArgs, ToolsArgs,
};
pub use connect::ConnectArgs;
pub use parse::{arguments_schema, result_schema};

/// Adds the problems of the branch name `name`, given as `field`, to `problems`.
pub(crate) fn branch_problems(problems: &mut Vec<Problem>, field: &str, name: &str) {
    if let Err(err) = crate::curation::Branch::named(field, name) {
        problems.extend(err.problems().iter().cloned());
    }
}

/// An operation's arguments: read from JSON, described by their schema, and checked for the
/// rules types cannot say.
pub trait Arguments: DeserializeOwned + JsonSchema + 'static {
    /// Every problem beyond the types (empty text, a lease that is not positive, a record that
    /// breaks the limits), named by the argument names.
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let _ = limits;
        Vec::new()
    }

    /// Reads the arguments from a JSON object of named arguments, reporting every problem at
    /// once (unknown names, wrong types, then [`Arguments::problems`] under `limits`).
    fn read(value: Value, limits: &Limits) -> Result<Self> {
        parse::read(value, |args: &Self| args.problems(limits))
    }
}

/// How an operation uses the store: what a face needs to know to open it (the CLI opens a
/// store that does not exist yet only for an operation that creates, and never writes to
/// one for an operation that reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Only reads: the store is left as it was.
    Reads,
    /// Changes what is in the store, refused where there is nothing to change.
    Writes,
    /// May create the first record of a store that has none yet.
    Creates,
}

/// A store operation, described once for every face.
pub trait Operation {
    /// The name: Python's method, Node's (in camelCase), the CLI's subcommand (in kebab-case)
    /// and the MCP tool's (`handoff_<name>`).
    const NAME: &'static str;
    /// How it uses the store.
    const ACCESS: Access;
    /// For an operation on something other than handoffs (a task, memory): its group and
    /// verb, which name the CLI's subcommand (`handoff task create`) and the MCP tool
    /// (`task_create`); with the group `""`, the verb stands alone (`handoff cherry-pick`,
    /// `cherry_pick`). `None`: a handoff operation, `handoff <name>` and `handoff_<name>`.
    const COMMAND: Option<(&'static str, &'static str)> = None;
    /// The arguments a face may take by position, in order; the others go by name.
    const POSITIONAL: &'static [&'static str];
    /// The arguments.
    type Args: Arguments;
    /// The result: what every face returns, shaped by its `Serialize` (Node's objects,
    /// the MCP tools' `structuredContent`, the HTTP API's bodies) and described by its schema
    /// (the catalog's `result`, from which the faces' result types are generated).
    type Output: Serialize + JsonSchema + 'static;

    /// Runs the operation.
    fn run(store: &Store, args: Self::Args) -> Result<Self::Output>;

    /// Reads the arguments from JSON (every problem at once) and runs the operation, inside
    /// the operation's span (see `trace`).
    fn call(store: &Store, args: Value) -> Result<Self::Output> {
        let span = crate::trace::operation(Self::NAME, store, &args);
        let _inside = span.enter();
        let read = Self::Args::read(args, store.limits());
        crate::trace::outcome(&span, read.and_then(|args| Self::run(store, args)))
    }
}

/// What a face needs to know of an operation to expose it.
#[derive(Clone, Debug, Serialize)]
pub struct OperationInfo {
    /// [`Operation::NAME`].
    pub name: &'static str,
    /// [`Operation::ACCESS`].
    pub access: Access,
    /// [`Operation::COMMAND`].
    pub command: Option<(&'static str, &'static str)>,
    /// [`Operation::POSITIONAL`].
    pub positional: &'static [&'static str],
    /// The argument type's JSON schema; its `description` is the operation's doc.
    pub arguments: Value,
    /// The result type's JSON schema (`Option<T>`: `T` or `null`; a list: an array); each
    /// named type it uses is under `$defs`, with its doc as `description`.
    pub result: Value,
}

impl OperationInfo {
    /// The description of operation `O`.
    pub fn of<O: Operation>() -> OperationInfo {
        OperationInfo {
            name: O::NAME,
            access: O::ACCESS,
            command: O::COMMAND,
            positional: O::POSITIONAL,
            arguments: arguments_schema::<O::Args>().as_value().clone(),
            result: result_schema::<O::Output>().as_value().clone(),
        }
    }

    /// The MCP tool's name: `<group>_<verb>` (a kebab-case verb in snake case), the verb alone
    /// without a group, or `handoff_<name>` for a handoff operation.
    pub fn tool(&self) -> String {
        match self.command {
            Some(("", verb)) => verb.replace('-', "_"),
            Some((group, verb)) => format!("{group}_{}", verb.replace('-', "_")),
            None => format!("handoff_{}", self.name),
        }
    }

    /// The operation's one-paragraph doc (the argument type's).
    pub fn description(&self) -> &str {
        self.arguments
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// What a face does with an operation it knows by name only: [`each`] hands it every
/// operation's type, so that a face can build its own table of typed calls (a runner per name)
/// without listing the operations itself.
pub trait Visitor {
    /// What the face makes of one operation.
    type Out;
    /// Handles the operation `O`.
    fn visit<O: Operation>(&mut self) -> Self::Out;
}

/// What `visitor` makes of every store operation, in the order the faces list them: the one
/// list of operations.
pub fn each<V: Visitor>(visitor: &mut V) -> Vec<V::Out> {
    vec![
        visitor.visit::<Create>(),
        visitor.visit::<CreateMany>(),
        visitor.visit::<Get>(),
        visitor.visit::<List>(),
        visitor.visit::<Claim>(),
        visitor.visit::<ClaimNext>(),
        visitor.visit::<Heartbeat>(),
        visitor.visit::<Release>(),
        visitor.visit::<Fail>(),
        visitor.visit::<Complete>(),
        visitor.visit::<Reject>(),
        visitor.visit::<Cancel>(),
        visitor.visit::<Retry>(),
        visitor.visit::<RevokeClaim>(),
        visitor.visit::<SetPriority>(),
        visitor.visit::<CancelClaim>(),
        visitor.visit::<Events>(),
        visitor.visit::<Chain>(),
        visitor.visit::<Checkpoint>(),
        visitor.visit::<Stalled>(),
        visitor.visit::<Stats>(),
        visitor.visit::<QueueCounts>(),
        visitor.visit::<Metrics>(),
        visitor.visit::<Reap>(),
        visitor.visit::<Backup>(),
        visitor.visit::<Restore>(),
        visitor.visit::<Check>(),
        visitor.visit::<Capabilities>(),
        visitor.visit::<CreateTask>(),
        visitor.visit::<StartTask>(),
        visitor.visit::<GetTask>(),
        visitor.visit::<ListTasks>(),
        visitor.visit::<UpdateTask>(),
        visitor.visit::<PauseTask>(),
        visitor.visit::<ResumeTask>(),
        visitor.visit::<CancelTask>(),
        visitor.visit::<JoinTask>(),
        visitor.visit::<CompleteTask>(),
        visitor.visit::<FailTask>(),
        visitor.visit::<EscalateStep>(),
        visitor.visit::<RerunTask>(),
        visitor.visit::<FailStep>(),
        visitor.visit::<ResolveEscalation>(),
        visitor.visit::<TaskEvents>(),
        visitor.visit::<TaskHistory>(),
        visitor.visit::<TaskStatistics>(),
        visitor.visit::<Prune>(),
        visitor.visit::<MemoryGet>(),
        visitor.visit::<MemoryPut>(),
        visitor.visit::<MemoryList>(),
        visitor.visit::<MemoryDelete>(),
        visitor.visit::<Session>(),
        visitor.visit::<Initialize>(),
        visitor.visit::<Report>(),
        visitor.visit::<Decide>(),
        visitor.visit::<ReportError>(),
        visitor.visit::<Recover>(),
        visitor.visit::<Escalate>(),
        visitor.visit::<Resolve>(),
        visitor.visit::<ProtocolRun>(),
        visitor.visit::<ProtocolHistory>(),
        visitor.visit::<ProtocolStats>(),
        visitor.visit::<AddConversation>(),
        visitor.visit::<AppendMessages>(),
        visitor.visit::<GetConversation>(),
        visitor.visit::<Messages>(),
        visitor.visit::<ListConversations>(),
        visitor.visit::<CherryPick>(),
        visitor.visit::<CherryPickDecisions>(),
        visitor.visit::<CherryPickTools>(),
        visitor.visit::<CherryPickToFacts>(),
        visitor.visit::<AddFacts>(),
        visitor.visit::<Facts>(),
        visitor.visit::<Branches>(),
        visitor.visit::<Verify>(),
        visitor.visit::<Merge>(),
        visitor.visit::<ContextFor>(),
        visitor.visit::<CurationEvents>(),
        visitor.visit::<CreateBundle>(),
        visitor.visit::<GetBundle>(),
        visitor.visit::<ListBundles>(),
        visitor.visit::<BundleByToken>(),
        visitor.visit::<SetVisibility>(),
        visitor.visit::<SignBundle>(),
        visitor.visit::<TrustBundleKeys>(),
        visitor.visit::<DeleteBundle>(),
        visitor.visit::<ImportBundle>(),
        visitor.visit::<VerifyBundle>(),
        visitor.visit::<Replay>(),
        visitor.visit::<Compare>(),
    ]
}

/// Every store operation, in the order the faces list them.
pub fn catalog() -> Vec<OperationInfo> {
    struct Describe;
    impl Visitor for Describe {
        type Out = OperationInfo;
        fn visit<O: Operation>(&mut self) -> OperationInfo {
            OperationInfo::of::<O>()
        }
    }
    each(&mut Describe)
}

/// The catalog as JSON, for generators of stubs and docs.
pub fn catalog_json() -> String {
    serde_json::to_string_pretty(&catalog()).unwrap_or_default()
}
