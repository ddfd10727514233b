//! The operations of replay: `replay` (a task's run as one timeline) and `compare` (two runs
//! side by side).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::ops::{Access, Arguments, Operation};
use crate::replay::{TaskComparison, TaskReplay};
use crate::store::Store;

/// A task's whole run as one timeline, oldest first (`at`, `type`, `agent`, `summary`,
/// `data`): its handoffs' events, its plan's log and its curation log; each agent's
/// contribution; its key facts and conversations; how it ended.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayArgs {
    /// The task.
    pub task_id: String,
    /// Key facts and conversations only if verified (default false: everything not
    /// invalidated).
    #[serde(default)]
    pub verified_only: Option<bool>,
}

impl Arguments for ReplayArgs {}

/// The `replay` operation.
pub struct Replay;

impl Operation for Replay {
    const NAME: &'static str = "replay";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "replay"));
    const POSITIONAL: &'static [&'static str] = &["task_id"];
    type Args = ReplayArgs;
    type Output = TaskReplay;

    fn run(store: &Store, args: ReplayArgs) -> Result<TaskReplay> {
        store.replay(&args.task_id, args.verified_only.unwrap_or(false))
    }
}

/// Two runs side by side (an original and its rerun): their agents, decision points, key
/// facts (only in one, in both), outcomes and durations.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareArgs {
    /// The first task.
    pub task_a: String,
    /// The second.
    pub task_b: String,
}

impl Arguments for CompareArgs {}

/// The `compare` operation.
pub struct Compare;

impl Operation for Compare {
    const NAME: &'static str = "compare";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "compare"));
    const POSITIONAL: &'static [&'static str] = &["task_a", "task_b"];
    type Args = CompareArgs;
    type Output = TaskComparison;

    fn run(store: &Store, args: CompareArgs) -> Result<TaskComparison> {
        store.compare(&args.task_a, &args.task_b)
    }
}
