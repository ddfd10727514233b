//! The operations on tasks, steps, memory and sessions (docs/design.md §7), under the names every face
//! shows: Python's `create_task`, the CLI's `handoff task create`, the MCP tool `task_create`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Problem, Result};
use crate::ops::{Access, Arguments, ClaimInput, Operation};
use crate::plan::StepSpec;
use crate::record::{Handoff, Metadata};
use crate::store::{self, Store};
use crate::task::{self, HistoryEntry, NewTask, TaskEvent, TaskHeader, TaskStatus, TaskUpdate};
use crate::validate::Limits;

/// Creates a task (status `pending`) with its plan, checked whole: every problem at once
/// (duplicate step ids, unknown dependencies, cycles named as a path, agent names, sizes);
/// nothing is written when there is one. `start_task` offers its first steps.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTaskArgs {
    /// What the task is called.
    pub name: String,
    /// What it must achieve (the name when not given).
    #[serde(default)]
    pub goal: String,
    /// The task's id, chosen by the caller (an id: `[A-Za-z0-9._:@-]{1,128}`), so that its
    /// branch reads `task/<id>`; a time-ordered one when not given. Taken already: refused.
    #[serde(default)]
    pub id: Option<String>,
    /// Objectives without agents, in words: each becomes a step `"1"`, `"2"`, ... offered to
    /// the task's members (`join_task` assigns them).
    #[serde(default)]
    pub objectives: Vec<String>,
    /// The plan: steps with an `id`, a `name`, the `agent` that works on it and the ids of
    /// the steps it waits for (`dependencies`); optionally `instructions`, `max_attempts`
    /// (default 3) and `cluster`.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// How to tell that the goal is reached.
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// Context every step shares (the seed's `user_request`, `constraints`, ...).
    #[serde(default)]
    pub context: Option<Metadata>,
    /// Free-form JSON object kept with the task (`lessons`, a list, goes to its history).
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// The agent that drives the task, if any: the task's log and its steps' `created` events
    /// name it as who offered them.
    #[serde(default)]
    pub orchestrator: Option<String>,
    /// Who gets a step that failed on every attempt (default `human`).
    #[serde(default)]
    pub escalate_to: Option<String>,
}

impl CreateTaskArgs {
    fn into_new(self) -> NewTask {
        NewTask {
            id: self.id,
            name: self.name,
            goal: self.goal,
            steps: self.steps,
            objectives: self.objectives,
            success_criteria: self.success_criteria,
            context: self.context.unwrap_or_default(),
            metadata: self.metadata.unwrap_or_default(),
            orchestrator: self.orchestrator,
            escalate_to: self.escalate_to,
        }
    }
}

impl Arguments for CreateTaskArgs {
    /// The plan's problems, found before anything is opened or written (the CLI creates no
    /// store for a refused plan); the store checks the plan again as it creates the task.
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let checked = task::create(
            self.clone().into_new(),
            "task".to_owned(),
            chrono::DateTime::UNIX_EPOCH,
            limits,
        );
        match checked {
            Ok(_) => Vec::new(),
            Err(err) => err.problems().to_vec(),
        }
    }
}

/// The `create_task` operation.
pub struct CreateTask;

impl Operation for CreateTask {
    const NAME: &'static str = "create_task";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "create"));
    const POSITIONAL: &'static [&'static str] = &["name", "goal", "steps"];
    type Args = CreateTaskArgs;
    type Output = store::Task;

    fn run(store: &Store, args: CreateTaskArgs) -> Result<store::Task> {
        store.create_task(args.into_new())
    }
}

/// Declares an operation on one task named by its `id`: its argument struct and its
/// `Operation` impl.
macro_rules! task_operation {
    (
        $(#[$doc:meta])*
        $op:ident, $args:ident, $name:literal, $verb:literal, $access:ident,
        { $($(#[$field_doc:meta])* $field:ident : $ty:ty),* },
        |$store:ident, $a:ident| $body:expr
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $args {
            /// The task.
            pub id: String,
            $($(#[$field_doc])* #[serde(default)] pub $field: $ty,)*
        }

        impl Arguments for $args {}

        #[doc = concat!("The `", $name, "` operation.")]
        pub struct $op;

        impl Operation for $op {
            const NAME: &'static str = $name;
            const ACCESS: Access = Access::$access;
            const COMMAND: Option<(&'static str, &'static str)> = Some(("task", $verb));
            const POSITIONAL: &'static [&'static str] = &["id" $(, stringify!($field))*];
            type Args = $args;
            type Output = store::Task;

            fn run($store: &Store, $a: $args) -> Result<store::Task> {
                $body
            }
        }
    };
}

task_operation!(
    /// Starts a pending task: the steps that wait for nothing are offered as handoffs to their
    /// agents, who take them with `claim_next`.
    StartTask, StartTaskArgs, "start_task", "start", Writes, {},
    |store, args| store.start_task(&args.id)
);

task_operation!(
    /// The task with this id, with its plan and each step's status; `NOT_FOUND` if there is
    /// none.
    GetTask, GetTaskArgs, "get_task", "get", Reads, {},
    |store, args| store.get_task(&args.id)
);

task_operation!(
    /// Completes a task on its caller's word, with `result_summary`: the steps nobody holds
    /// that are not done are skipped (offers and escalations withdrawn); a step a worker
    /// holds refuses it. With `merge_to_main`, in the same transaction, the verified facts and
    /// the verified or cherry-picked conversations of every branch of the task reach `main`;
    /// unverified items stay on the task's branches. A task that completed by itself takes
    /// the summary and the merge.
    CompleteTask, CompleteTaskArgs, "complete_task", "complete", Writes,
    {
        /// What came of the task, in words (its history's summary).
        result_summary: Option<String>,
        /// Merge the task's verified knowledge into `main` too.
        merge_to_main: bool
    },
    |store, args| store.complete_task(&args.id, args.result_summary.as_deref(), args.merge_to_main)
);

task_operation!(
    /// Fails a task for `reason`: offers and escalations nobody holds are withdrawn and its
    /// unfinished steps cancelled (steps already claimed may finish); its history says it
    /// failed.
    FailTask, FailTaskArgs, "fail_task", "fail", Writes,
    {
        /// Why it failed (required).
        reason: String
    },
    |store, args| store.fail_task(&args.id, &args.reason)
);

/// A step named by its id, or by its number as the seeds number objectives (`1` is step
/// `"1"`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StepRef {
    /// The step's id.
    Id(String),
    /// The step's number.
    Number(u64),
}

impl StepRef {
    fn into_id(self) -> String {
        match self {
            StepRef::Id(id) => id,
            StepRef::Number(n) => n.to_string(),
        }
    }
}

/// `agent` joins a task, with an optional `role`; the steps named in `objectives` (steps
/// without an agent, such as the objectives `"1"`, `"2"`, ... of a task created with
/// `objectives`) are assigned to it, and offered to it alone. Its branch is
/// `task/<id>/<agent>`; the task's log and replay show an `agent_join`. Steps without an agent
/// are offered to the task's members: joining is how an agent may take them.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinTaskArgs {
    /// The task.
    #[schemars(extend("x-aliases" = ["task_id"]))]
    pub id: String,
    /// The agent that joins.
    #[schemars(extend("x-aliases" = ["agent_id"]))]
    pub agent: String,
    /// Its role in the task (`investigator`, `reviewer`, ...).
    #[serde(default)]
    pub role: Option<String>,
    /// The steps assigned to it, by id or number.
    #[serde(default)]
    #[schemars(extend("x-aliases" = ["assigned_objectives"]))]
    pub objectives: Vec<StepRef>,
}

impl Arguments for JoinTaskArgs {}

/// The `join_task` operation.
pub struct JoinTask;

impl Operation for JoinTask {
    const NAME: &'static str = "join_task";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "join"));
    const POSITIONAL: &'static [&'static str] = &["id", "agent"];
    type Args = JoinTaskArgs;
    type Output = store::Task;

    fn run(store: &Store, args: JoinTaskArgs) -> Result<store::Task> {
        let objectives: Vec<String> = args.objectives.into_iter().map(StepRef::into_id).collect();
        store.join_task(&args.id, &args.agent, args.role.as_deref(), &objectives)
    }
}

/// The holder of a step hands it on, with its claim, as an `escalation` handoff to
/// `to_agent`, linked to the step: it carries `instructions`, `blockers` and
/// `priority_items`, and its successor packet what the holder knew; completing it completes
/// the step. The holder's handoff completes, saying so. Returns the escalation.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalateStepArgs {
    /// The step's claim, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// Who takes the step on.
    #[schemars(extend("x-aliases" = ["to_agent_id"]))]
    pub to_agent: String,
    /// What the successor is to do.
    #[serde(default)]
    pub instructions: Option<String>,
    /// What stopped the holder.
    #[serde(default)]
    pub blockers: Vec<String>,
    /// What to do first (the seed's priority objectives).
    #[serde(default)]
    #[schemars(extend("x-aliases" = ["priority_objectives"]))]
    pub priority_items: Vec<StepRef>,
}

impl Arguments for EscalateStepArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        self.claim.problems(&mut problems);
        problems
    }
}

/// The `escalate_step` operation.
pub struct EscalateStep;

impl Operation for EscalateStep {
    const NAME: &'static str = "escalate_step";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("step", "escalate"));
    const POSITIONAL: &'static [&'static str] = &["claim", "to_agent"];
    type Args = EscalateStepArgs;
    type Output = Handoff;

    fn run(store: &Store, args: EscalateStepArgs) -> Result<Handoff> {
        let priority: Vec<String> = args
            .priority_items
            .into_iter()
            .map(StepRef::into_id)
            .collect();
        store.escalate_step(
            args.claim.into_ref()?,
            &args.to_agent,
            args.instructions.as_deref(),
            &args.blockers,
            &priority,
        )
    }
}

impl Arguments for store::Rerun {}

/// The `rerun_task` operation.
pub struct RerunTask;

impl Operation for RerunTask {
    const NAME: &'static str = "rerun_task";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "rerun"));
    const POSITIONAL: &'static [&'static str] = &["task_id"];
    type Args = store::Rerun;
    type Output = store::Task;

    fn run(store: &Store, args: store::Rerun) -> Result<store::Task> {
        store.rerun_task(args)
    }
}

task_operation!(
    /// Pauses a task: its offers nobody holds are withdrawn and no step is offered until it
    /// resumes; steps already claimed may finish.
    PauseTask, PauseTaskArgs, "pause_task", "pause", Writes, {},
    |store, args| store.pause_task(&args.id)
);

task_operation!(
    /// Resumes a paused task: the steps it withdrew or whose dependencies finished meanwhile
    /// are offered. A task that cannot go on (every open step waits for an escalation) is
    /// refused, naming the escalations and what to call.
    ResumeTask, ResumeTaskArgs, "resume_task", "resume", Writes, {},
    |store, args| store.resume_task(&args.id)
);

task_operation!(
    /// Cancels a task: offers nobody took are withdrawn and its unfinished steps cancelled;
    /// steps already claimed may finish.
    CancelTask, CancelTaskArgs, "cancel_task", "cancel", Writes,
    {
        /// Why.
        reason: Option<String>
    },
    |store, args| store.cancel_task(&args.id, args.reason.as_deref())
);

/// Changes a task if it is still at `expected_version` (compare-and-swap), else
/// `CONFLICT` naming both versions: each field given replaces the task's, and
/// `add_steps` extends its plan (checked with the plan, every problem at once).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTaskArgs {
    /// The task.
    pub id: String,
    /// The version the caller read (the task's `version`).
    pub expected_version: u64,
    /// A new goal.
    #[serde(default)]
    pub goal: Option<String>,
    /// New success criteria.
    #[serde(default)]
    pub success_criteria: Option<Vec<String>>,
    /// New shared context.
    #[serde(default)]
    pub context: Option<Metadata>,
    /// New metadata.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// Steps to add; they may depend on the plan's steps and on each other.
    #[serde(default)]
    pub add_steps: Vec<StepSpec>,
    /// New artifacts (what the task produced).
    #[serde(default)]
    pub artifacts: Option<Vec<Value>>,
    /// New issues (what went wrong along the way).
    #[serde(default)]
    pub issues: Option<Vec<Value>>,
}

impl Arguments for UpdateTaskArgs {}

/// The `update_task` operation.
pub struct UpdateTask;

impl Operation for UpdateTask {
    const NAME: &'static str = "update_task";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "update"));
    const POSITIONAL: &'static [&'static str] = &["id", "expected_version"];
    type Args = UpdateTaskArgs;
    type Output = store::Task;

    fn run(store: &Store, args: UpdateTaskArgs) -> Result<store::Task> {
        let update = TaskUpdate {
            goal: args.goal,
            success_criteria: args.success_criteria,
            context: args.context,
            metadata: args.metadata,
            add_steps: args.add_steps,
            artifacts: args.artifacts,
            issues: args.issues,
        };
        store.update_task(&args.id, args.expected_version, update)
    }
}

/// Task summaries (no steps), oldest first, a page at a time.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// Only tasks in this status.
    #[serde(default)]
    pub status: Option<TaskStatus>,
    /// At most this many (a page).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only tasks after this one: the id of the last task of the previous page.
    #[serde(default)]
    pub after: Option<String>,
}

impl Arguments for ListTasksArgs {}

/// The `list_tasks` operation.
pub struct ListTasks;

impl Operation for ListTasks {
    const NAME: &'static str = "list_tasks";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "list"));
    const POSITIONAL: &'static [&'static str] = &["status", "limit"];
    type Args = ListTasksArgs;
    type Output = Vec<TaskHeader>;

    fn run(store: &Store, args: ListTasksArgs) -> Result<Vec<TaskHeader>> {
        store.list_tasks(args.status, args.limit, args.after.as_deref())
    }
}

/// Reports that a step's work failed, with its claim: the step is offered again while
/// attempts remain, then escalated (the task paused until `resolve_escalation`).
/// `INVALID_TRANSITION` for a handoff that carries no step.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailStepArgs {
    /// The step's claim, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// What went wrong.
    pub error: String,
}

impl Arguments for FailStepArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        self.claim.problems(&mut problems);
        problems
    }
}

/// The `fail_step` operation.
pub struct FailStep;

impl Operation for FailStep {
    const NAME: &'static str = "fail_step";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("step", "fail"));
    const POSITIONAL: &'static [&'static str] = &["claim", "error"];
    type Args = FailStepArgs;
    type Output = Handoff;

    fn run(store: &Store, args: FailStepArgs) -> Result<Handoff> {
        store.fail_step(args.claim.into_ref()?, &args.error)
    }
}

/// A human's answer to a step that failed on every attempt, given with the escalation's
/// claim: the escalation completes with `resolution` and the step is offered again with its
/// attempts reset (`retry`) or skipped, its dependents going on without it; a task the
/// escalation paused resumes.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveEscalationArgs {
    /// The escalation's claim, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// What the human decided, in words.
    pub resolution: String,
    /// Try the step again (true) or skip it (false, the default).
    #[serde(default)]
    pub retry: bool,
}

impl Arguments for ResolveEscalationArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        self.claim.problems(&mut problems);
        problems
    }
}

/// The `resolve_escalation` operation.
pub struct ResolveEscalation;

impl Operation for ResolveEscalation {
    const NAME: &'static str = "resolve_escalation";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "resolve"));
    const POSITIONAL: &'static [&'static str] = &["claim", "resolution", "retry"];
    type Args = ResolveEscalationArgs;
    type Output = store::Task;

    fn run(store: &Store, args: ResolveEscalationArgs) -> Result<store::Task> {
        store.resolve_escalation(args.claim.into_ref()?, &args.resolution, args.retry)
    }
}

/// The task's log, oldest first: created, started, each step offered, started, completed,
/// failed, escalated or skipped, paused, resumed, updated, cancelled, completed.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskEventsArgs {
    /// The task.
    pub id: String,
}

impl Arguments for TaskEventsArgs {}

/// The `task_events` operation.
pub struct TaskEvents;

impl Operation for TaskEvents {
    const NAME: &'static str = "task_events";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "events"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = TaskEventsArgs;
    type Output = Vec<TaskEvent>;

    fn run(store: &Store, args: TaskEventsArgs) -> Result<Vec<TaskEvent>> {
        store.task_events(&args.id)
    }
}

/// Finished tasks, newest first, in the seed's `task-history.json` form: how each ended
/// (`success`, `partial` with skipped steps, `failure`), its duration, steps, retries and the
/// tokens its workers reported.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskHistoryArgs {
    /// At most this many.
    #[serde(default)]
    pub limit: Option<usize>,
}

impl Arguments for TaskHistoryArgs {}

/// The `task_history` operation.
pub struct TaskHistory;

impl Operation for TaskHistory {
    const NAME: &'static str = "task_history";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "history"));
    const POSITIONAL: &'static [&'static str] = &["limit"];
    type Args = TaskHistoryArgs;
    type Output = Vec<HistoryEntry>;

    fn run(store: &Store, args: TaskHistoryArgs) -> Result<Vec<HistoryEntry>> {
        store.task_history(args.limit)
    }
}

/// Statistics over every finished task: how many, the share that succeeded, the mean
/// duration, and how many ended each way.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStatisticsArgs {}

impl Arguments for TaskStatisticsArgs {}

/// The `task_statistics` operation.
pub struct TaskStatistics;

impl Operation for TaskStatistics {
    const NAME: &'static str = "task_statistics";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "statistics"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = TaskStatisticsArgs;
    type Output = task::TaskStatistics;

    fn run(store: &Store, _: TaskStatisticsArgs) -> Result<task::TaskStatistics> {
        store.task_statistics()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::ops::{self, catalog};

    #[test]
    fn a_plan_runs_through_the_operations() {
        let store = Store::memory();
        let task = CreateTask::call(
            &store,
            json!({"name": "Write a post", "goal": "A bilingual blog post", "steps": [
                {"id": "research", "name": "Research", "agent": "researcher"},
                {"id": "draft", "name": "Draft", "agent": "writer", "dependencies": ["research"]},
            ]}),
        )
        .unwrap();
        let id = task.header.id.clone();
        StartTask::call(&store, json!({ "id": id })).unwrap();
        let claim = ops::ClaimNext::call(&store, json!({"agent": "researcher"}))
            .unwrap()
            .unwrap();
        let reference = json!({"handoff_id": claim.handoff.id, "token": claim.token,
                               "secret": claim.secret.expose()});
        ops::Complete::call(
            &store,
            json!({"claim": reference, "outcome": "notes", "tokens_used": 1200}),
        )
        .unwrap();
        let task = GetTask::call(&store, json!({ "id": id })).unwrap();
        assert_eq!(task.steps[0].tokens_used, Some(1200));
        assert_eq!(task.header.tokens_used, Some(1200));
        let draft = ops::ClaimNext::call(&store, json!({"agent": "writer"}))
            .unwrap()
            .unwrap();
        let reference = json!({"handoff_id": draft.handoff.id, "token": draft.token,
                               "secret": draft.secret.expose()});
        let failed = FailStep::call(&store, json!({"claim": reference, "error": "no model"}));
        assert_eq!(failed.unwrap().attempts, 1);
        let listed = ListTasks::call(&store, json!({"status": "in_progress"})).unwrap();
        assert_eq!(listed.len(), 1);
    }

    #[test]
    fn a_handoff_that_carries_no_step_cannot_fail_as_one() {
        let store = Store::memory();
        store
            .create(crate::NewHandoff::new("t1", "Fix the login bug"))
            .unwrap();
        let claim = store.claim_next("a", None, store::DEFAULT_LEASE).unwrap();
        let claim = claim.unwrap();
        let reference = json!({"handoff_id": claim.handoff.id, "token": claim.token,
                               "secret": claim.secret.expose()});
        let err = FailStep::call(&store, json!({"claim": reference, "error": "x"})).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidTransition);
        assert_eq!(store.get(&claim.handoff.id).unwrap().attempts, 0);
    }

    #[test]
    fn task_operations_are_named_by_group_and_verb() {
        let tools: Vec<String> = catalog().iter().map(|op| op.tool()).collect();
        for tool in [
            "task_create",
            "task_get",
            "task_list",
            "task_start",
            "step_fail",
        ] {
            assert!(tools.iter().any(|t| t == tool), "{tool}");
        }
        assert!(tools.iter().any(|t| t == "memory_get"));
        assert!(tools.iter().any(|t| t == "handoff_claim_next"));
        let unique: std::collections::BTreeSet<_> = tools.iter().collect();
        assert_eq!(unique.len(), tools.len());
    }
}
