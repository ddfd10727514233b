//! Tasks (docs/design.md §7): a goal and a plan whose steps run as handoffs. This module is the
//! aggregate and its transitions, pure like the handoff machine ([`crate::machine`]): each
//! takes what it changes and the time, and says what the store must do in the same
//! transaction (offer steps as handoffs, escalate one) and what to write to the log.
//!
//! The aggregate is shaped for storage that keeps a task's header apart from its steps, so that
//! starting a task and completing a step touch only the steps concerned, never the whole plan:
//! each step counts the dependencies it still waits for (`waiting_on`) and names the steps that
//! wait for it (`dependents`). Starting reads the steps that wait for nothing; completing a step
//! reads it and its dependents.
//!
//! The folder: this file is the pure part; `plan` the plan's steps and their checks, `store` the
//! task's part of the [`Store`](crate::Store), `rerun` running a task again, `ops` its operations.

pub(crate) mod ops;
pub mod plan;
pub(crate) mod rerun;
pub(crate) mod store;

use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::plan::{Plan, StepSpec};
use crate::record::Metadata;
use crate::validate::{Collector, Limits};

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum TaskStatus {
    /// Created, not started: no step is offered.
    Pending,
    /// Its ready steps are offered as handoffs.
    InProgress,
    /// Every step completed (or was skipped).
    Completed,
    /// Ended without reaching its goal.
    Failed,
    /// No step is offered until it resumes; claimed steps may finish.
    Paused,
    /// Withdrawn; claimed steps may finish, nothing else is offered.
    Cancelled,
}

impl TaskStatus {
    /// Whether nothing more happens to the task.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum StepStatus {
    /// Waiting for its dependencies, or for its task to start or resume.
    Pending,
    /// Offered: its handoff waits for a worker.
    Ready,
    /// A worker holds its handoff.
    InProgress,
    /// Done; its output is the handoff's outcome.
    Completed,
    /// Its last attempt failed, and it is not escalated (yet).
    Failed,
    /// Failed on every attempt; a human decides (`resolve`).
    Escalated,
    /// Passed over by a resolution; its dependents go on without it.
    Skipped,
    /// Its task was cancelled before it ran.
    Cancelled,
}

impl StepStatus {
    /// Whether the step lets its dependents go on.
    pub fn is_done(self) -> bool {
        matches!(self, StepStatus::Completed | StepStatus::Skipped)
    }
}

/// What a caller gives to create a task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    /// The task's id, chosen by the caller (an id: `[A-Za-z0-9._:@-]{1,128}`; its branch is
    /// `task/<id>`); the store picks a time-ordered one when it is `None`.
    #[serde(default)]
    pub id: Option<String>,
    /// What the task is called.
    pub name: String,
    /// What it must achieve (the name when empty).
    #[serde(default)]
    pub goal: String,
    /// The plan.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// Objectives without agents: each becomes a step `"1"`, `"2"`, ... after `steps`,
    /// offered to the task's members (see `join_task`).
    #[serde(default)]
    pub objectives: Vec<String>,
    /// How to tell that the goal is reached.
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// Shared context for every step (the seed's `user_request`, `constraints`, ...).
    #[serde(default)]
    pub context: Metadata,
    /// Anything else the caller keeps with the task.
    #[serde(default)]
    pub metadata: Metadata,
    /// The agent that drives the task, if any.
    #[serde(default)]
    pub orchestrator: Option<String>,
    /// Who gets a step that failed on every attempt (default `human`).
    #[serde(default)]
    pub escalate_to: Option<String>,
}

/// What `update_task` changes: each field given replaces the task's (`add_steps` appends to
/// the plan).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskUpdate {
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
    /// New artifacts.
    #[serde(default)]
    pub artifacts: Option<Vec<Value>>,
    /// New issues.
    #[serde(default)]
    pub issues: Option<Vec<Value>>,
}

/// A task without its steps: what every transition reads and writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "TaskSummary"))]
pub struct TaskHeader {
    /// The task's id.
    pub id: String,
    /// What it is called.
    pub name: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Grows by one with every change: the task's compare-and-swap token.
    pub version: u64,
    /// When it was created.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: DateTime<Utc>,
    /// When it was first started.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub started_at: Option<DateTime<Utc>>,
    /// When it last changed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: DateTime<Utc>,
    /// When it finished.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub completed_at: Option<DateTime<Utc>>,
    /// The agent that drives it.
    pub orchestrator: Option<String>,
    /// Who gets an escalated step.
    pub escalate_to: String,
    /// What it must achieve.
    pub goal: String,
    /// How to tell that the goal is reached.
    pub success_criteria: Vec<String>,
    /// Shared context.
    pub context: Metadata,
    /// What it produced.
    pub artifacts: Vec<Value>,
    /// What went wrong along the way.
    pub issues: Vec<Value>,
    /// The caller's own data.
    pub metadata: Metadata,
    /// Steps in the plan.
    pub steps_total: usize,
    /// Steps neither completed nor skipped nor cancelled.
    pub steps_open: usize,
    /// Steps completed or skipped.
    pub steps_done: usize,
    /// Steps skipped.
    pub skipped: usize,
    /// Failed attempts of any step, retried or not.
    pub retries: u32,
    /// The model tokens its steps took, as their workers reported them on completion (`None`
    /// when none did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<u64>,
    /// How many events the task's log holds: the next one's `seq` is this plus one.
    pub events: u64,
    /// Its steps and log were pruned: only this header (its history) is left.
    #[serde(default)]
    pub pruned: bool,
    /// The agents that joined it, in the order they joined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Member>,
    /// What came of it, as whoever completed it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The steps that wait for nothing from the start: what `start` offers (emptied then).
    pub roots: Vec<String>,
    /// Steps whose dependencies are done while the task could not offer them (paused):
    /// what `resume` offers.
    pub waiting: Vec<String>,
}

/// An agent that joined a task (`join_task`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "TaskMember"))]
pub struct Member {
    /// The agent.
    pub agent: String,
    /// Its role in the task (`investigator`, `reviewer`, ...), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The steps assigned to it when it joined.
    #[serde(default)]
    pub objectives: Vec<String>,
    /// Its branch: `task/<task>/<agent>`.
    pub branch: String,
    /// When it joined.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub joined_at: DateTime<Utc>,
}

/// One step as stored: its place in the plan and where it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepState {
    /// Its index in the plan.
    pub position: usize,
    /// What the caller gave.
    #[serde(flatten)]
    pub spec: StepSpec,
    /// The steps that wait for this one.
    pub dependents: Vec<String>,
    /// How many of its dependencies are not done yet.
    pub waiting_on: usize,
    /// Where it stands.
    pub status: StepStatus,
    /// Failed attempts of its current offer.
    pub attempts: u32,
    /// The handoff that carries its current offer.
    pub handoff_id: Option<String>,
    /// The escalation that waits for a decision on it, while it is escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_id: Option<String>,
    /// When a worker first took it.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub started_at: Option<DateTime<Utc>>,
    /// When it was done.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub completed_at: Option<DateTime<Utc>>,
    /// What came of it.
    pub output: Option<String>,
    /// What went wrong last.
    pub error: Option<String>,
    /// The model tokens it took, as its worker reported them on completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<u64>,
    /// Its worker's start, until the task's log takes it (see [`TaskHeader::step_claimed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_to_log: Option<StepStart>,
}

/// A worker's start of a step, as the task's log records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepStart {
    /// The worker.
    pub agent: String,
    /// When it took the step.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub at: DateTime<Utc>,
}

/// What happened to a task, for its log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum TaskChange {
    /// The task was created.
    Created,
    /// It started.
    Started,
    /// A step is offered as a handoff.
    StepOffered {
        /// The step.
        step: String,
    },
    /// A worker took a step.
    StepStarted {
        /// The step.
        step: String,
        /// The worker.
        agent: String,
    },
    /// A step is done.
    StepCompleted {
        /// The step.
        step: String,
    },
    /// An attempt at a step failed.
    StepFailed {
        /// The step.
        step: String,
        /// What went wrong.
        error: String,
        /// Whether it was the last allowed attempt.
        last: bool,
    },
    /// A step failed on every attempt and went to a human, or its holder handed it on as
    /// an escalation (`escalate_step`) to `to`.
    StepEscalated {
        /// The step.
        step: String,
        /// Whom its holder handed it on to (`None`: it failed on every attempt).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
    },
    /// A step was passed over.
    StepSkipped {
        /// The step.
        step: String,
    },
    /// An agent joined the task.
    AgentJoin {
        /// The agent.
        agent: String,
        /// Its role, if given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// The steps assigned to it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        objectives: Vec<String>,
    },
    /// The task was paused.
    Paused,
    /// It resumed.
    Resumed,
    /// Its goal, criteria, context, metadata, artifacts or issues changed, or steps were
    /// added.
    Updated {
        /// Its version after the change.
        version: u64,
    },
    /// It was cancelled.
    Cancelled {
        /// Why, if given.
        reason: Option<String>,
    },
    /// It finished with every step done, or was completed by its caller (the steps not
    /// done then are skipped).
    Completed,
    /// It failed.
    Failed {
        /// Why.
        reason: String,
    },
    /// Its branches' verified knowledge was merged into `into`.
    Merge {
        /// The branch merged into (`main`).
        into: String,
        /// Facts copied.
        facts: u64,
        /// Conversations copied.
        conversations: u64,
    },
}

impl TaskChange {
    /// What the change says beyond its kind, as it appears on the wire (`{"step":
    /// "research"}`); `None` for a bare change (`created`, `paused`).
    pub fn detail(&self) -> Option<Value> {
        serde_json::to_value(self)
            .ok()
            .and_then(|mut v| v.get_mut("detail").map(Value::take))
    }

    /// The change's kind as it appears on the wire (`created`, `step_offered`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            TaskChange::Created => "created",
            TaskChange::Started => "started",
            TaskChange::StepOffered { .. } => "step_offered",
            TaskChange::StepStarted { .. } => "step_started",
            TaskChange::StepCompleted { .. } => "step_completed",
            TaskChange::StepFailed { .. } => "step_failed",
            TaskChange::StepEscalated { .. } => "step_escalated",
            TaskChange::StepSkipped { .. } => "step_skipped",
            TaskChange::AgentJoin { .. } => "agent_join",
            TaskChange::Paused => "paused",
            TaskChange::Resumed => "resumed",
            TaskChange::Updated { .. } => "updated",
            TaskChange::Cancelled { .. } => "cancelled",
            TaskChange::Completed => "completed",
            TaskChange::Failed { .. } => "failed",
            TaskChange::Merge { .. } => "merge",
        }
    }
}

/// One entry of a task's log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskEvent {
    /// Its place in the task's log, from 1.
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// When it happened.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub at: DateTime<Utc>,
    /// Who caused it: the worker of a step's handoff, the holder of an escalation; `None`
    /// for the caller of a task operation, and for the clock.
    pub actor: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub change: TaskChange,
}

/// How a finished task ended, for its history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum TaskResult {
    /// Every step completed.
    Success,
    /// It completed with steps skipped.
    Partial,
    /// It was cancelled or failed.
    Failure,
}

/// A finished task in the seed's `task-history.json` form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct HistoryEntry {
    /// The task.
    pub id: String,
    /// Its name.
    pub name: String,
    /// How it ended.
    pub result: TaskResult,
    /// When it started (`None`: cancelled before it started).
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub started_at: Option<DateTime<Utc>>,
    /// When it finished.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub completed_at: DateTime<Utc>,
    /// From start to finish.
    pub duration_seconds: Option<f64>,
    /// Its goal.
    pub summary: String,
    /// What it produced.
    pub artifacts: Vec<Value>,
    /// Its steps and retries.
    pub metrics: HistoryMetrics,
    /// What it taught (the task's `metadata.lessons`, when it has a list of them).
    pub lessons: Vec<Value>,
}

/// The numbers of a [`HistoryEntry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct HistoryMetrics {
    /// Steps in the plan.
    pub steps_total: usize,
    /// Steps done (completed or skipped).
    pub steps_completed: usize,
    /// Failed attempts of any step.
    pub retries: u32,
    /// The model tokens its steps took, as their workers reported them (`None` when none did).
    pub tokens_used: Option<u64>,
}

impl TaskHeader {
    /// The header as a caller sees a task without its steps: every field but the store's own
    /// bookkeeping (`roots`, `waiting`, `events`).
    pub fn summary_value(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Value::Object(fields) = &mut value {
            for internal in ["roots", "waiting", "events"] {
                fields.remove(internal);
            }
        }
        value
    }

    /// The task's history entry, once it is finished.
    pub fn history(&self) -> Option<HistoryEntry> {
        let completed_at = self.completed_at.filter(|_| self.status.is_finished())?;
        let result = match self.status {
            TaskStatus::Completed if self.skipped == 0 => TaskResult::Success,
            TaskStatus::Completed => TaskResult::Partial,
            _ => TaskResult::Failure,
        };
        let lessons = match self.metadata.get("lessons") {
            Some(Value::Array(lessons)) => lessons.clone(),
            _ => Vec::new(),
        };
        Some(HistoryEntry {
            id: self.id.clone(),
            name: self.name.clone(),
            result,
            started_at: self.started_at,
            completed_at,
            duration_seconds: self
                .started_at
                .map(|start| (completed_at - start).as_seconds_f64()),
            summary: self
                .result_summary
                .clone()
                .unwrap_or_else(|| self.goal.clone()),
            artifacts: self.artifacts.clone(),
            metrics: HistoryMetrics {
                steps_total: self.steps_total,
                steps_completed: self.steps_done,
                retries: self.retries,
                tokens_used: self.tokens_used,
            },
            lessons,
        })
    }
}

/// Statistics over finished tasks (the seed's `task_statistics`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStatistics {
    /// Finished tasks.
    pub total_tasks: usize,
    /// The share of them that succeeded (0 when there are none).
    pub success_rate: f64,
    /// The mean time from start to finish of those that started.
    pub avg_duration_seconds: Option<f64>,
    /// How many ended each way.
    pub by_result: std::collections::BTreeMap<String, usize>,
}

impl TaskStatistics {
    /// The statistics of `history`.
    pub fn of(history: &[HistoryEntry]) -> TaskStatistics {
        let mut by_result = std::collections::BTreeMap::new();
        for entry in history {
            let key = serde_json::to_value(entry.result)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            *by_result.entry(key).or_insert(0) += 1;
        }
        let durations: Vec<f64> = history.iter().filter_map(|e| e.duration_seconds).collect();
        let successes = history
            .iter()
            .filter(|e| e.result == TaskResult::Success)
            .count();
        TaskStatistics {
            total_tasks: history.len(),
            success_rate: if history.is_empty() {
                0.0
            } else {
                successes as f64 / history.len() as f64
            },
            avg_duration_seconds: (!durations.is_empty())
                .then(|| durations.iter().sum::<f64>() / durations.len() as f64),
            by_result,
        }
    }
}

/// What a transition asks of the store, beyond writing what it changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Starts of steps that the log takes now, before `changes`, each at its own time and by
    /// its worker (see [`TaskHeader::step_claimed`]).
    pub started: Vec<(String, StepStart)>,
    /// For the log, in order.
    pub changes: Vec<TaskChange>,
    /// Steps to offer as new handoffs (addressed to the step's agent).
    pub offer: Vec<String>,
    /// A step to escalate: an escalation handoff to the task's `escalate_to`.
    pub escalate: Option<String>,
    /// Steps whose offered handoffs are to be withdrawn (cancelled): nobody took them.
    pub withdraw: Vec<String>,
    /// Escalations to withdraw (cancelled): the task ended without their decision.
    pub withdraw_escalations: Vec<String>,
}

/// A transition the task or step does not allow in the state it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRefusal {
    /// The task.
    pub task_id: String,
    /// What was refused (`start`, `complete_step`, ...).
    pub event: &'static str,
    /// Why, in words.
    pub reason: String,
}

/// [`TaskHeader::step_claimed`] without the task, which it does not need: the step of task
/// `task_id` is taken by `agent`.
pub fn start_step(
    task_id: &str,
    step: &mut StepState,
    agent: &str,
    now: DateTime<Utc>,
) -> std::result::Result<(), TaskRefusal> {
    require(task_id, "step_claimed", step, &[StepStatus::Ready], "ready")?;
    step.status = StepStatus::InProgress;
    step.started_at.get_or_insert(now);
    step.start_to_log = Some(StepStart {
        agent: agent.to_owned(),
        at: now,
    });
    Ok(())
}

/// Refuses `event` on a step of task `task_id` unless the step is in one of the `allowed`
/// states (`expected`, in words).
fn require(
    task_id: &str,
    event: &'static str,
    step: &StepState,
    allowed: &[StepStatus],
    expected: &str,
) -> std::result::Result<(), TaskRefusal> {
    if allowed.contains(&step.status) {
        return Ok(());
    }
    Err(TaskRefusal {
        task_id: task_id.to_owned(),
        event,
        reason: format!("step {} is {:?}, not {expected}", step.spec.id, step.status),
    })
}

/// The start `step` keeps for the log, taken for the change being made to it.
fn take_start(step: &mut StepState) -> Vec<(String, StepStart)> {
    step.start_to_log
        .take()
        .map(|start| (step.spec.id.clone(), start))
        .into_iter()
        .collect()
}

impl fmt::Display for TaskRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task {}: cannot {}: {}",
            self.task_id, self.event, self.reason
        )
    }
}

impl std::error::Error for TaskRefusal {}

/// A transition's outcome.
pub type Transition = std::result::Result<Effects, TaskRefusal>;

/// Checks `update` against the task's `existing` steps (every problem at once) and makes
/// the states of the steps it adds: each waits for its dependencies that are not done, and
/// the existing steps they depend on list them as dependents (changed in place; their indexes
/// are returned).
pub fn check_update(
    update: &TaskUpdate,
    existing: &mut [StepState],
    limits: &Limits,
) -> Result<(Vec<StepState>, Vec<usize>)> {
    let mut c = Collector::default();
    if let Some(goal) = &update.goal {
        if goal.trim().is_empty() {
            c.push("goal", "must not be empty");
        }
        if goal.len() > limits.max_field_bytes {
            c.push(
                "goal",
                format!("must be at most {} bytes", limits.max_field_bytes),
            );
        }
    }
    for (field, map) in [("context", &update.context), ("metadata", &update.metadata)] {
        if let Some(map) = map {
            c.json(field, &map.values().collect::<Vec<_>>(), limits);
        }
    }
    for (field, list) in [("artifacts", &update.artifacts), ("issues", &update.issues)] {
        if let Some(list) = list {
            c.json(field, &list.iter().collect::<Vec<_>>(), limits);
        }
    }
    let specs: Vec<StepSpec> = existing.iter().map(|s| s.spec.clone()).collect();
    crate::plan::check_added(&mut c, &update.add_steps, &specs, limits);
    c.finish()?;
    let plan = Plan::checked(specs);
    let mut added: Vec<StepState> = update
        .add_steps
        .iter()
        .enumerate()
        .map(|(i, spec)| StepState {
            position: existing.len() + i,
            spec: spec.clone(),
            dependents: Vec::new(),
            waiting_on: spec
                .dependencies
                .iter()
                .filter(|d| {
                    plan.position(d)
                        .is_none_or(|at| !existing[at].status.is_done())
                })
                .count(),
            status: StepStatus::Pending,
            attempts: 0,
            handoff_id: None,
            escalation_id: None,
            started_at: None,
            completed_at: None,
            output: None,
            error: None,
            tokens_used: None,
            start_to_log: None,
        })
        .collect();
    let mut changed = Vec::new();
    for spec in &update.add_steps {
        for dependency in &spec.dependencies {
            if let Some(at) = plan.position(dependency) {
                existing[at].dependents.push(spec.id.clone());
                if !changed.contains(&at) {
                    changed.push(at);
                }
            } else if let Some(new) = added.iter_mut().find(|s| s.spec.id == *dependency) {
                new.dependents.push(spec.id.clone());
            }
        }
    }
    Ok((added, changed))
}

/// A new task and its steps, checked whole (the plan, names, agents, sizes: every problem at
/// once) before anything exists.
pub fn create(
    mut new: NewTask,
    generated_id: String,
    now: DateTime<Utc>,
    limits: &Limits,
) -> Result<(TaskHeader, Vec<StepState>)> {
    let mut c = Collector::default();
    let id = new.id.take().unwrap_or(generated_id);
    c.ident("id", &id);
    if new.name.trim().is_empty() {
        c.push("name", "must not be empty");
    }
    if new.goal.is_empty() {
        new.goal = new.name.clone();
    } else if new.goal.trim().is_empty() {
        c.push("goal", "must not be empty");
    }
    for (i, objective) in new.objectives.iter().enumerate() {
        if objective.trim().is_empty() {
            c.push(format!("objectives[{i}]"), "must not be empty");
        }
    }
    new.steps.extend(
        new.objectives
            .iter()
            .enumerate()
            .map(|(i, objective)| StepSpec::objective((i + 1).to_string(), objective.clone())),
    );

    for (field, value) in [("name", &new.name), ("goal", &new.goal)] {
        if value.len() > limits.max_field_bytes {
            c.push(
                field,
                format!("must be at most {} bytes", limits.max_field_bytes),
            );
        }
    }
    c.opt_agent("orchestrator", new.orchestrator.as_deref());
    c.opt_agent("escalate_to", new.escalate_to.as_deref());
    c.json("context", &new.context.values().collect::<Vec<_>>(), limits);
    c.json(
        "metadata",
        &new.metadata.values().collect::<Vec<_>>(),
        limits,
    );
    for (i, criterion) in new.success_criteria.iter().enumerate() {
        if criterion.len() > limits.max_field_bytes {
            c.push(
                format!("success_criteria[{i}]"),
                format!("must be at most {} bytes", limits.max_field_bytes),
            );
        }
    }
    crate::plan::check_into(&mut c, &new.steps, limits);
    c.finish()?;
    let plan = Plan::checked(new.steps);
    let steps: Vec<StepState> = plan
        .steps()
        .iter()
        .enumerate()
        .map(|(position, spec)| StepState {
            position,
            spec: spec.clone(),
            dependents: plan
                .dependents(position)
                .iter()
                .map(|&d| plan.steps()[d].id.clone())
                .collect(),
            waiting_on: spec.dependencies.len(),
            status: StepStatus::Pending,
            attempts: 0,
            handoff_id: None,
            escalation_id: None,
            started_at: None,
            completed_at: None,
            output: None,
            error: None,
            tokens_used: None,
            start_to_log: None,
        })
        .collect();
    let header = TaskHeader {
        id,
        name: new.name,
        status: TaskStatus::Pending,
        version: 1,
        created_at: now,
        started_at: None,
        updated_at: now,
        completed_at: None,
        orchestrator: new.orchestrator,
        escalate_to: new.escalate_to.unwrap_or_else(|| "human".to_owned()),
        goal: new.goal,
        success_criteria: new.success_criteria,
        context: new.context,
        artifacts: Vec::new(),
        issues: Vec::new(),
        metadata: new.metadata,
        steps_total: steps.len(),
        steps_open: steps.len(),
        steps_done: 0,
        skipped: 0,
        retries: 0,
        tokens_used: None,
        events: 0,
        pruned: false,
        members: Vec::new(),
        result_summary: None,
        failure: None,
        roots: steps
            .iter()
            .filter(|s| s.waiting_on == 0)
            .map(|s| s.spec.id.clone())
            .collect(),
        waiting: Vec::new(),
    };
    Ok((header, steps))
}

impl TaskHeader {
    fn refuse(&self, event: &'static str, reason: impl Into<String>) -> TaskRefusal {
        TaskRefusal {
            task_id: self.id.clone(),
            event,
            reason: reason.into(),
        }
    }

    /// [`require`] for a step of this task.
    fn require(
        &self,
        event: &'static str,
        step: &StepState,
        allowed: &[StepStatus],
        expected: &str,
    ) -> std::result::Result<(), TaskRefusal> {
        require(&self.id, event, step, allowed, expected)
    }

    /// Marks the task changed at `now`.
    fn touch(&mut self, now: DateTime<Utc>) {
        self.version += 1;
        self.updated_at = now;
    }

    /// Offers `step` (it waits for nothing) when the task is running; otherwise keeps it in
    /// `waiting`, for `resume` to offer.
    fn offer(&mut self, step: &mut StepState, effects: &mut Effects) {
        if step.status != StepStatus::Pending {
            return;
        }
        if self.status == TaskStatus::InProgress {
            step.status = StepStatus::Ready;
            effects.offer.push(step.spec.id.clone());
            effects.changes.push(TaskChange::StepOffered {
                step: step.spec.id.clone(),
            });
        } else if !self.status.is_finished() && !self.waiting.contains(&step.spec.id) {
            self.waiting.push(step.spec.id.clone());
        }
    }

    /// Starts the task: every step in `roots` (the steps [`TaskHeader::roots`] names) is
    /// offered.
    /// A plan with no steps completes at once.
    pub fn start(&mut self, roots: &mut [StepState], now: DateTime<Utc>) -> Transition {
        if self.status != TaskStatus::Pending {
            return Err(self.refuse("start", format!("it is {:?}, not pending", self.status)));
        }
        self.status = TaskStatus::InProgress;
        self.started_at = Some(now);
        self.touch(now);
        let mut effects = Effects {
            changes: vec![TaskChange::Started],
            ..Effects::default()
        };
        for step in roots.iter_mut().filter(|s| s.waiting_on == 0) {
            self.offer(step, &mut effects);
        }
        // Only a start reads them; the header, written at every change, is smaller without.
        self.roots.clear();
        self.finish_if_done(now, &mut effects);
        Ok(effects)
    }

    /// A worker took the step's handoff: the step is in progress, and nothing else changes.
    /// The task itself is not written (its version stays), so that workers taking a task's
    /// steps do not wait for one another on it; the start is kept on the step
    /// ([`StepState::start_to_log`]) and the task's log takes it, at the time it happened,
    /// with the step's next change (its completion, failure or release), which does lock the
    /// task.
    pub fn step_claimed(
        &self,
        step: &mut StepState,
        agent: &str,
        now: DateTime<Utc>,
    ) -> Transition {
        start_step(&self.id, step, agent, now)?;
        Ok(Effects::default())
    }

    /// The step is done with `output`; those of `dependents` (the step's) that wait for
    /// nothing more are offered. The task completes with its last open step.
    pub fn step_completed(
        &mut self,
        step: &mut StepState,
        dependents: &mut [StepState],
        output: &str,
        tokens_used: Option<u64>,
        now: DateTime<Utc>,
    ) -> Transition {
        self.require(
            "step_completed",
            step,
            &[StepStatus::InProgress],
            "in progress",
        )?;
        step.status = StepStatus::Completed;
        step.completed_at = Some(now);
        step.output = Some(output.to_owned());
        step.error = None;
        if let Some(tokens) = tokens_used {
            step.tokens_used = Some(step.tokens_used.unwrap_or(0).saturating_add(tokens));
            self.tokens_used = Some(self.tokens_used.unwrap_or(0).saturating_add(tokens));
        }
        let mut effects = Effects {
            started: take_start(step),
            changes: vec![TaskChange::StepCompleted {
                step: step.spec.id.clone(),
            }],
            ..Effects::default()
        };
        self.release_dependents(step, dependents, &mut effects);
        self.touch(now);
        self.finish_if_done(now, &mut effects);
        Ok(effects)
    }

    /// An attempt at the step failed with `error`. While attempts remain its handoff is
    /// pending again (the step is ready); after the last, the step is escalated and the task
    /// paused until a human resolves it.
    pub fn step_failed(
        &mut self,
        step: &mut StepState,
        error: &str,
        last: bool,
        now: DateTime<Utc>,
    ) -> Transition {
        let running = [StepStatus::InProgress, StepStatus::Ready];
        self.require("step_failed", step, &running, "running")?;
        step.attempts += 1;
        step.error = Some(error.to_owned());
        self.retries += 1;
        let id = step.spec.id.clone();
        let mut effects = Effects {
            started: take_start(step),
            changes: vec![TaskChange::StepFailed {
                step: id.clone(),
                error: error.to_owned(),
                last,
            }],
            ..Effects::default()
        };
        if last {
            step.status = StepStatus::Escalated;
            effects.changes.push(TaskChange::StepEscalated {
                step: id.clone(),
                to: None,
            });
            effects.escalate = Some(id);
            if self.status == TaskStatus::InProgress {
                self.status = TaskStatus::Paused;
                effects.changes.push(TaskChange::Paused);
            }
        } else {
            step.status = StepStatus::Ready;
        }
        self.touch(now);
        Ok(effects)
    }

    /// A human's answer to an escalated step: offered again with its attempts reset
    /// (`retry`), or skipped, its `dependents` going on without it. A task paused by the
    /// escalation resumes, and the steps of `waiting` (those [`TaskHeader::waiting`] names)
    /// are offered again.
    pub fn resolve(
        &mut self,
        step: &mut StepState,
        dependents: &mut [StepState],
        waiting: &mut [StepState],
        retry: bool,
        now: DateTime<Utc>,
    ) -> Transition {
        self.require("resolve", step, &[StepStatus::Escalated], "escalated")?;
        if self.status.is_finished() {
            return Err(self.refuse("resolve", format!("it is {:?}", self.status)));
        }
        step.escalation_id = None;
        let mut effects = Effects::default();
        if self.status == TaskStatus::Paused {
            self.status = TaskStatus::InProgress;
            effects.changes.push(TaskChange::Resumed);
            let names = std::mem::take(&mut self.waiting);
            for waiting in waiting
                .iter_mut()
                .filter(|s| names.contains(&s.spec.id) && s.waiting_on == 0)
            {
                self.offer(waiting, &mut effects);
            }
        }
        if retry {
            step.status = StepStatus::Pending;
            step.attempts = 0;
            step.error = None;
            self.offer(step, &mut effects);
        } else {
            step.status = StepStatus::Skipped;
            step.completed_at = Some(now);
            self.skipped += 1;
            effects.changes.push(TaskChange::StepSkipped {
                step: step.spec.id.clone(),
            });
            self.release_dependents(step, dependents, &mut effects);
        }
        self.touch(now);
        self.finish_if_done(now, &mut effects);
        Ok(effects)
    }

    /// Pauses the task: the offers of `steps` (its steps) that nobody holds are withdrawn,
    /// and nothing more is offered until it resumes; claimed steps may finish.
    pub fn pause(&mut self, steps: &mut [StepState], now: DateTime<Utc>) -> Transition {
        if self.status != TaskStatus::InProgress {
            return Err(self.refuse("pause", format!("it is {:?}, not in progress", self.status)));
        }
        self.status = TaskStatus::Paused;
        self.touch(now);
        let mut effects = Effects {
            changes: vec![TaskChange::Paused],
            ..Effects::default()
        };
        self.withdraw_offers(steps, &mut effects);
        Ok(effects)
    }

    /// Withdraws the offers of `steps` that nobody holds (the task is paused): each goes back
    /// to pending, kept in `waiting` for `resume` to offer again.
    pub fn withdraw_offers(&mut self, steps: &mut [StepState], effects: &mut Effects) {
        for step in steps.iter_mut().filter(|s| s.status == StepStatus::Ready) {
            step.status = StepStatus::Pending;
            effects.withdraw.push(step.spec.id.clone());
            if !self.waiting.contains(&step.spec.id) {
                self.waiting.push(step.spec.id.clone());
            }
        }
    }

    /// Resumes a paused task: of `steps` (its steps), those named by
    /// [`TaskHeader::waiting`] are offered. Escalated steps stay escalated until decided; a
    /// task where nothing could then move (every open step waits for an escalation) is
    /// refused, naming the escalations and what to call.
    pub fn resume(&mut self, steps: &mut [StepState], now: DateTime<Utc>) -> Transition {
        if self.status != TaskStatus::Paused {
            return Err(self.refuse("resume", format!("it is {:?}, not paused", self.status)));
        }
        let can_move = steps.iter().any(|s| {
            s.status == StepStatus::InProgress
                || (self.waiting.contains(&s.spec.id)
                    && s.waiting_on == 0
                    && s.status == StepStatus::Pending)
        });
        let escalated: Vec<String> = steps
            .iter()
            .filter(|s| s.status == StepStatus::Escalated)
            .map(|s| match &s.escalation_id {
                Some(id) => format!(
                    "step {} (escalation {id} to {})",
                    s.spec.id, self.escalate_to
                ),
                None => format!("step {}", s.spec.id),
            })
            .collect();
        if !can_move && !escalated.is_empty() {
            return Err(self.refuse(
                "resume",
                format!(
                    "it cannot go on: {} waits for a decision; answer with resolve_escalation \
                     (retry or skip), complete the escalation (the step is skipped), or end \
                     the task with fail_task or cancel_task",
                    escalated.join(", ")
                ),
            ));
        }
        self.status = TaskStatus::InProgress;
        let waiting = std::mem::take(&mut self.waiting);
        self.touch(now);
        let mut effects = Effects {
            changes: vec![TaskChange::Resumed],
            ..Effects::default()
        };
        for step in steps
            .iter_mut()
            .filter(|s| waiting.contains(&s.spec.id) && s.waiting_on == 0)
        {
            self.offer(step, &mut effects);
        }
        Ok(effects)
    }

    /// `member` joins the task; the steps of `assigned` (the objectives given, checked to be
    /// the task's) become its own: an offer nobody holds is withdrawn and made again to it.
    pub fn join(
        &mut self,
        member: Member,
        assigned: &mut [StepState],
        now: DateTime<Utc>,
    ) -> Transition {
        if self.status.is_finished() {
            return Err(self.refuse("join", format!("it is {:?}", self.status)));
        }
        for step in assigned.iter() {
            if let Some(agent) = step.spec.agent.as_deref().filter(|a| *a != member.agent) {
                return Err(self.refuse(
                    "join",
                    format!("step {} is assigned to {agent}", step.spec.id),
                ));
            }
            let open = [StepStatus::Pending, StepStatus::Ready];
            self.require("join", step, &open, "pending or offered")?;
        }
        let mut effects = Effects {
            changes: vec![TaskChange::AgentJoin {
                agent: member.agent.clone(),
                role: member.role.clone(),
                objectives: member.objectives.clone(),
            }],
            ..Effects::default()
        };
        for step in assigned.iter_mut() {
            if step.spec.agent.is_some() {
                continue;
            }
            step.spec.agent = Some(member.agent.clone());
            if step.status == StepStatus::Ready {
                effects.withdraw.push(step.spec.id.clone());
                step.status = StepStatus::Pending;
                self.offer(step, &mut effects);
            }
        }
        match self.members.iter_mut().find(|m| m.agent == member.agent) {
            Some(known) => {
                if member.role.is_some() {
                    known.role = member.role;
                }
                for objective in member.objectives {
                    if !known.objectives.contains(&objective) {
                        known.objectives.push(objective);
                    }
                }
            }
            None => self.members.push(member),
        }
        self.touch(now);
        Ok(effects)
    }

    /// The holder of `step` hands it on as an escalation to `to`: the step is offered again,
    /// by the escalation the store makes, whose completion completes it.
    pub fn hand_on(&mut self, step: &mut StepState, to: &str, now: DateTime<Utc>) -> Transition {
        if self.status.is_finished() {
            return Err(self.refuse("escalate_step", format!("it is {:?}", self.status)));
        }
        self.require(
            "escalate_step",
            step,
            &[StepStatus::InProgress],
            "in progress",
        )?;
        step.status = StepStatus::Ready;
        self.touch(now);
        Ok(Effects {
            started: take_start(step),
            changes: vec![TaskChange::StepEscalated {
                step: step.spec.id.clone(),
                to: Some(to.to_owned()),
            }],
            ..Effects::default()
        })
    }

    /// Completes the task on its caller's word, with `summary`: of `open` (its steps not
    /// done), those nobody holds are skipped and their offers or escalations withdrawn; a step
    /// a worker holds refuses it. A task that completed by itself takes the summary.
    pub fn complete(
        &mut self,
        open: &mut [StepState],
        summary: Option<&str>,
        now: DateTime<Utc>,
    ) -> Transition {
        if matches!(self.status, TaskStatus::Failed | TaskStatus::Cancelled) {
            return Err(self.refuse("complete", format!("it is {:?}", self.status)));
        }
        if let Some(held) = open.iter().find(|s| s.status == StepStatus::InProgress) {
            return Err(self.refuse(
                "complete",
                format!(
                    "step {} is held by a worker: complete, fail or release it first",
                    held.spec.id
                ),
            ));
        }
        if let Some(summary) = summary {
            self.result_summary = Some(summary.to_owned());
        }
        self.touch(now);
        let mut effects = Effects::default();
        if self.status == TaskStatus::Completed {
            return Ok(effects);
        }
        for step in open.iter_mut().filter(|s| !s.status.is_done()) {
            self.withdraw(step, &mut effects);
            step.status = StepStatus::Skipped;
            step.completed_at = Some(now);
            self.skipped += 1;
            self.steps_done += 1;
            effects.changes.push(TaskChange::StepSkipped {
                step: step.spec.id.clone(),
            });
        }
        self.steps_open = 0;
        self.waiting.clear();
        self.status = TaskStatus::Completed;
        self.started_at.get_or_insert(now);
        self.completed_at = Some(now);
        effects.changes.push(TaskChange::Completed);
        Ok(effects)
    }

    /// Fails the task for `reason`: like a cancellation (see [`TaskHeader::cancel`]), and its
    /// history says it failed.
    pub fn fail(&mut self, open: &mut [StepState], reason: &str, now: DateTime<Utc>) -> Transition {
        if self.status.is_finished() {
            return Err(self.refuse("fail", format!("it is {:?}", self.status)));
        }
        self.failure = Some(reason.to_owned());
        self.end(
            open,
            TaskStatus::Failed,
            TaskChange::Failed {
                reason: reason.to_owned(),
            },
            now,
        )
    }

    /// Asks the store to withdraw what `step` has on offer: its offer nobody took, its
    /// escalation waiting for a decision.
    fn withdraw(&self, step: &mut StepState, effects: &mut Effects) {
        if step.status == StepStatus::Ready {
            effects.withdraw.push(step.spec.id.clone());
        }
        if let Some(escalation) = step.escalation_id.take() {
            effects.withdraw_escalations.push(escalation);
        }
    }

    /// Applies `update` (checked whole before: see [`check_update`]). `added` are the new
    /// steps, made by [`check_update`]; those that wait for nothing are offered (or kept for
    /// the start or a resume).
    pub fn update(
        &mut self,
        update: TaskUpdate,
        added: &mut [StepState],
        now: DateTime<Utc>,
    ) -> Transition {
        if self.status.is_finished() {
            return Err(self.refuse("update", format!("it is {:?}", self.status)));
        }
        let TaskUpdate {
            goal,
            success_criteria,
            context,
            metadata,
            add_steps: _,
            artifacts,
            issues,
        } = update;
        if let Some(goal) = goal {
            self.goal = goal;
        }
        if let Some(criteria) = success_criteria {
            self.success_criteria = criteria;
        }
        if let Some(context) = context {
            self.context = context;
        }
        if let Some(metadata) = metadata {
            self.metadata = metadata;
        }
        if let Some(artifacts) = artifacts {
            self.artifacts = artifacts;
        }
        if let Some(issues) = issues {
            self.issues = issues;
        }
        let mut effects = Effects {
            changes: vec![TaskChange::Updated {
                version: self.version + 1,
            }],
            ..Effects::default()
        };
        self.steps_total += added.len();
        self.steps_open += added.len();
        for step in added.iter_mut().filter(|s| s.waiting_on == 0) {
            if self.status == TaskStatus::Pending {
                self.roots.push(step.spec.id.clone());
            } else {
                self.offer(step, &mut effects);
            }
        }
        self.touch(now);
        Ok(effects)
    }

    /// The step's worker gave its handoff back: the step is ready again, nothing counted.
    pub fn step_released(&mut self, step: &mut StepState, now: DateTime<Utc>) -> Transition {
        self.require(
            "step_released",
            step,
            &[StepStatus::InProgress],
            "in progress",
        )?;
        step.status = StepStatus::Ready;
        self.touch(now);
        Ok(Effects {
            started: take_start(step),
            ..Effects::default()
        })
    }

    /// Cancels the task. Of `open` (its steps not yet done), those not taken by a worker are
    /// cancelled (the store withdraws the handoffs of the ready ones); claimed ones may finish.
    pub fn cancel(
        &mut self,
        open: &mut [StepState],
        reason: Option<&str>,
        now: DateTime<Utc>,
    ) -> Transition {
        if self.status.is_finished() {
            return Err(self.refuse("cancel", format!("it is {:?}", self.status)));
        }
        let change = TaskChange::Cancelled {
            reason: reason.map(str::to_owned),
        };
        self.end(open, TaskStatus::Cancelled, change, now)
    }

    /// Ends the task in `status` (cancelled or failed) with `change`: of `open`, the steps
    /// nobody holds are cancelled and their offers and escalations withdrawn; claimed steps
    /// may finish.
    fn end(
        &mut self,
        open: &mut [StepState],
        status: TaskStatus,
        change: TaskChange,
        now: DateTime<Utc>,
    ) -> Transition {
        self.status = status;
        self.completed_at = Some(now);
        self.waiting.clear();
        let mut effects = Effects {
            changes: vec![change],
            ..Effects::default()
        };
        for step in open.iter_mut() {
            self.withdraw(step, &mut effects);
            if matches!(
                step.status,
                StepStatus::Pending
                    | StepStatus::Ready
                    | StepStatus::Escalated
                    | StepStatus::Failed
            ) {
                step.status = StepStatus::Cancelled;
                self.steps_open = self.steps_open.saturating_sub(1);
            }
        }
        self.touch(now);
        Ok(effects)
    }

    /// Counts `step` done and offers those of `dependents` it was the last wait of.
    fn release_dependents(
        &mut self,
        step: &StepState,
        dependents: &mut [StepState],
        effects: &mut Effects,
    ) {
        self.steps_open = self.steps_open.saturating_sub(1);
        self.steps_done += 1;
        for dependent in dependents
            .iter_mut()
            .filter(|d| d.spec.dependencies.contains(&step.spec.id))
        {
            dependent.waiting_on = dependent.waiting_on.saturating_sub(1);
            if dependent.waiting_on == 0 {
                self.offer(dependent, effects);
            }
        }
    }

    /// Completes the task once no step is open.
    fn finish_if_done(&mut self, now: DateTime<Utc>, effects: &mut Effects) {
        if self.steps_open == 0 && self.status == TaskStatus::InProgress {
            self.status = TaskStatus::Completed;
            self.completed_at = Some(now);
            effects.changes.push(TaskChange::Completed);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;

    use chrono::TimeZone;

    use super::*;

    fn at(second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, second).unwrap()
    }

    /// The store's part, in memory: steps by id, and the calls that read only what each
    /// transition needs.
    struct Run {
        task: TaskHeader,
        steps: HashMap<String, StepState>,
    }

    impl Run {
        fn new(steps: Vec<StepSpec>) -> Run {
            let new = NewTask {
                name: "Write a post".into(),
                goal: "A bilingual blog post".into(),
                steps,
                ..NewTask::default()
            };
            let (task, steps) = create(new, "t1".into(), at(0), &Limits::default()).unwrap();
            Run {
                task,
                steps: steps.into_iter().map(|s| (s.spec.id.clone(), s)).collect(),
            }
        }

        /// Runs `f` on the step `id` and its dependents, then stores them back.
        fn with(
            &mut self,
            id: &str,
            f: impl FnOnce(&mut TaskHeader, &mut StepState, &mut [StepState]) -> Transition,
        ) -> Effects {
            let mut step = self.steps[id].clone();
            let mut dependents: Vec<StepState> = step
                .dependents
                .iter()
                .map(|d| self.steps[d].clone())
                .collect();
            let effects = f(&mut self.task, &mut step, &mut dependents).unwrap();
            for s in dependents.into_iter().chain([step]) {
                self.steps.insert(s.spec.id.clone(), s);
            }
            effects
        }

        fn named(&self, ids: &[String]) -> Vec<StepState> {
            ids.iter().map(|id| self.steps[id].clone()).collect()
        }

        fn start(&mut self) -> Effects {
            let mut roots = self.named(&self.task.roots);
            let effects = self.task.start(&mut roots, at(1)).unwrap();
            self.put(roots);
            effects
        }

        fn put(&mut self, steps: Vec<StepState>) {
            for s in steps {
                self.steps.insert(s.spec.id.clone(), s);
            }
        }

        fn status(&self, id: &str) -> StepStatus {
            self.steps[id].status
        }
    }

    fn blog() -> Vec<StepSpec> {
        vec![
            StepSpec::new("research", "Research", "researcher"),
            StepSpec::new("draft-ko", "Draft (ko)", "writer").after(["research"]),
            StepSpec::new("draft-en", "Draft (en)", "writer").after(["research"]),
            StepSpec::new("review", "Review", "reviewer").after(["draft-ko", "draft-en"]),
        ]
    }

    fn sorted(mut ids: Vec<String>) -> Vec<String> {
        ids.sort();
        ids
    }

    #[test]
    fn the_seeds_plan_runs_to_completion_offering_each_step_once_ready() {
        let mut run = Run::new(blog());
        assert_eq!(run.task.status, TaskStatus::Pending);
        assert_eq!(run.start().offer, ["research"]);
        run.with("research", |t, s, _| t.step_claimed(s, "researcher", at(2)));
        let done = run.with("research", |t, s, d| {
            t.step_completed(s, d, "notes", None, at(3))
        });
        assert_eq!(sorted(done.offer), ["draft-en", "draft-ko"]);
        for id in ["draft-ko", "draft-en"] {
            run.with(id, |t, s, _| t.step_claimed(s, "writer", at(4)));
        }
        let one = run.with("draft-ko", |t, s, d| {
            t.step_completed(s, d, "ko", None, at(5))
        });
        assert!(one.offer.is_empty(), "review still waits for draft-en");
        let both = run.with("draft-en", |t, s, d| {
            t.step_completed(s, d, "en", None, at(6))
        });
        assert_eq!(both.offer, ["review"]);
        run.with("review", |t, s, _| t.step_claimed(s, "reviewer", at(7)));
        let last = run.with("review", |t, s, d| {
            t.step_completed(s, d, "ok", None, at(8))
        });
        assert_eq!(last.changes.last(), Some(&TaskChange::Completed));
        assert_eq!(run.task.status, TaskStatus::Completed);
        assert_eq!(run.task.completed_at, Some(at(8)));
        assert_eq!(run.steps["review"].output.as_deref(), Some("ok"));
        assert!(run.task.version > 1);
    }

    #[test]
    fn a_claim_changes_the_step_alone_and_the_next_change_logs_its_start() {
        let mut run = Run::new(blog());
        run.start();
        let version = run.task.version;
        let start = StepStart {
            agent: "r".into(),
            at: at(2),
        };
        let claimed = run.with("research", |t, s, _| t.step_claimed(s, "r", at(2)));
        assert_eq!(claimed, Effects::default());
        assert_eq!(run.task.version, version, "the task itself did not change");
        assert_eq!(run.status("research"), StepStatus::InProgress);
        assert_eq!(run.steps["research"].start_to_log, Some(start.clone()));
        let done = run.with("research", |t, s, d| {
            t.step_completed(s, d, "notes", None, at(3))
        });
        assert_eq!(done.started, [("research".to_owned(), start)]);
        assert_eq!(run.steps["research"].start_to_log, None, "logged once");
        // A second claim of a step not offered again is refused, and changes nothing.
        let mut research = run.steps["research"].clone();
        assert!(run.task.step_claimed(&mut research, "r", at(4)).is_err());
        assert_eq!(research, run.steps["research"]);
    }

    #[test]
    fn failures_retry_then_escalate_and_a_resolution_retries_or_skips() {
        let mut run = Run::new(blog());
        run.start();
        run.with("research", |t, s, _| t.step_claimed(s, "r", at(2)));
        let retry = run.with("research", |t, s, _| {
            t.step_failed(s, "timeout", false, at(3))
        });
        assert!(retry.escalate.is_none());
        assert_eq!(run.status("research"), StepStatus::Ready);
        run.with("research", |t, s, _| t.step_claimed(s, "r", at(4)));
        let last = run.with("research", |t, s, _| {
            t.step_failed(s, "timeout", true, at(5))
        });
        assert_eq!(last.escalate.as_deref(), Some("research"));
        assert_eq!(run.status("research"), StepStatus::Escalated);
        assert_eq!(run.task.status, TaskStatus::Paused);
        assert_eq!(run.task.retries, 2);

        let again = run.with("research", |t, s, d| t.resolve(s, d, &mut [], true, at(6)));
        assert_eq!(again.offer, ["research"]);
        assert_eq!(run.task.status, TaskStatus::InProgress);
        assert_eq!(run.steps["research"].attempts, 0);

        run.with("research", |t, s, _| t.step_claimed(s, "r", at(7)));
        run.with("research", |t, s, _| t.step_failed(s, "again", true, at(8)));
        let skipped = run.with("research", |t, s, d| t.resolve(s, d, &mut [], false, at(9)));
        assert_eq!(sorted(skipped.offer), ["draft-en", "draft-ko"]);
        assert_eq!(run.status("research"), StepStatus::Skipped);
    }

    #[test]
    fn a_paused_task_offers_nothing_until_it_resumes() {
        let mut run = Run::new(blog());
        run.start();
        run.with("research", |t, s, _| t.step_claimed(s, "r", at(2)));
        run.task.pause(&mut [], at(3)).unwrap();
        // A claimed step may finish; what it unblocks waits for the resume.
        let done = run.with("research", |t, s, d| {
            t.step_completed(s, d, "notes", None, at(4))
        });
        assert!(done.offer.is_empty());
        assert_eq!(run.status("draft-ko"), StepStatus::Pending);
        assert_eq!(sorted(run.task.waiting.clone()), ["draft-en", "draft-ko"]);
        let mut waiting = run.named(&run.task.waiting);
        let resumed = run.task.resume(&mut waiting, at(5)).unwrap();
        run.put(waiting);
        assert_eq!(sorted(resumed.offer), ["draft-en", "draft-ko"]);
        assert_eq!(run.status("draft-en"), StepStatus::Ready);
    }

    #[test]
    fn pausing_withdraws_offers_nobody_holds_and_resuming_makes_them_again() {
        let mut run = Run::new(vec![
            StepSpec::new("a", "A", "x"),
            StepSpec::new("b", "B", "y"),
        ]);
        run.start();
        run.with("a", |t, s, _| t.step_claimed(s, "x", at(2)));
        let mut all: Vec<StepState> = run.steps.values().cloned().collect();
        let paused = run.task.pause(&mut all, at(3)).unwrap();
        run.put(all);
        assert_eq!(paused.withdraw, ["b"]);
        assert_eq!(run.status("b"), StepStatus::Pending);
        assert_eq!(run.status("a"), StepStatus::InProgress);
        let mut all: Vec<StepState> = run.steps.values().cloned().collect();
        let resumed = run.task.resume(&mut all, at(4)).unwrap();
        run.put(all);
        assert_eq!(resumed.offer, ["b"]);
        assert_eq!(run.status("b"), StepStatus::Ready);
    }

    #[test]
    fn a_task_waiting_only_for_an_escalation_cannot_resume_and_says_what_to_call() {
        let mut run = Run::new(vec![StepSpec::new("a", "A", "x")]);
        run.start();
        run.with("a", |t, s, _| t.step_claimed(s, "x", at(2)));
        run.with("a", |t, s, _| t.step_failed(s, "boom", true, at(3)));
        assert_eq!(run.task.status, TaskStatus::Paused);
        let mut all: Vec<StepState> = run.steps.values().cloned().collect();
        let err = run.task.resume(&mut all, at(4)).unwrap_err();
        assert!(err.reason.contains("resolve_escalation"), "{err}");
        assert!(err.reason.contains("fail_task"), "{err}");
        let failed = run.task.fail(&mut all, "gave up", at(5)).unwrap();
        assert_eq!(run.task.status, TaskStatus::Failed);
        assert_eq!(run.task.failure.as_deref(), Some("gave up"));
        assert_eq!(failed.changes[0].kind(), "failed");
        assert_eq!(run.task.history().unwrap().result, TaskResult::Failure);
    }

    #[test]
    fn objectives_become_steps_for_members_and_joining_assigns_them() {
        let new = NewTask {
            id: Some("fix-oauth".into()),
            name: "fix-oauth".into(),
            objectives: vec!["Find the cause".into(), "Fix it".into()],
            ..NewTask::default()
        };
        let (mut task, steps) = create(new, "generated".into(), at(0), &Limits::default()).unwrap();
        assert_eq!(task.id, "fix-oauth");
        assert_eq!(task.goal, "fix-oauth");
        let ids: Vec<_> = steps.iter().map(|s| s.spec.id.as_str()).collect();
        assert_eq!(ids, ["1", "2"]);
        assert!(steps.iter().all(|s| s.spec.agent.is_none()));
        let mut roots = steps.clone();
        task.start(&mut roots, at(1)).unwrap();
        let member = Member {
            agent: "investigator".into(),
            role: Some("investigator".into()),
            objectives: vec!["1".into()],
            branch: "task/fix-oauth/investigator".into(),
            joined_at: at(2),
        };
        let mut assigned = vec![roots[0].clone()];
        let joined = task.join(member.clone(), &mut assigned, at(2)).unwrap();
        assert_eq!(joined.changes[0].kind(), "agent_join");
        // The offer made to the members is withdrawn and made again to the agent.
        assert_eq!(joined.withdraw, ["1"]);
        assert_eq!(joined.offer, ["1"]);
        assert_eq!(assigned[0].spec.agent.as_deref(), Some("investigator"));
        assert_eq!(task.members, std::slice::from_ref(&member));
        let other = Member {
            agent: "someone".into(),
            ..member
        };
        let err = task.join(other, &mut assigned, at(3)).unwrap_err();
        assert!(err.reason.contains("assigned to investigator"), "{err}");
    }

    #[test]
    fn completing_a_task_skips_what_nobody_holds_and_refuses_while_a_step_is_held() {
        let mut run = Run::new(blog());
        run.start();
        run.with("research", |t, s, _| t.step_claimed(s, "r", at(2)));
        let mut open: Vec<StepState> = run.steps.values().cloned().collect();
        let err = run
            .task
            .complete(&mut open, Some("done"), at(3))
            .unwrap_err();
        assert!(err.reason.contains("research is held"), "{err}");
        run.with("research", |t, s, d| {
            t.step_completed(s, d, "notes", None, at(4))
        });
        let mut open: Vec<StepState> = run
            .steps
            .values()
            .filter(|s| !s.status.is_done())
            .cloned()
            .collect();
        let done = run
            .task
            .complete(&mut open, Some("Shipped"), at(5))
            .unwrap();
        run.put(open);
        assert_eq!(sorted(done.withdraw), ["draft-en", "draft-ko"]);
        assert_eq!(run.task.status, TaskStatus::Completed);
        assert_eq!(run.status("review"), StepStatus::Skipped);
        let history = run.task.history().unwrap();
        assert_eq!(history.summary, "Shipped");
        assert_eq!(history.result, TaskResult::Partial);
        // Completed already: the summary changes, nothing else.
        run.task
            .complete(&mut [], Some("Shipped v2"), at(6))
            .unwrap();
        assert_eq!(run.task.result_summary.as_deref(), Some("Shipped v2"));
    }

    #[test]
    fn cancelling_withdraws_what_no_worker_holds() {
        let mut run = Run::new(blog());
        run.start();
        run.with("research", |t, s, _| t.step_claimed(s, "r", at(2)));
        run.with("research", |t, s, d| {
            t.step_completed(s, d, "notes", None, at(3))
        });
        run.with("draft-ko", |t, s, _| t.step_claimed(s, "w", at(3)));
        let mut open: Vec<StepState> = run.steps.values().cloned().collect();
        let cancelled = run
            .task
            .cancel(&mut open, Some("plan changed"), at(3))
            .unwrap();
        run.put(open);
        assert_eq!(cancelled.withdraw, ["draft-en"]);
        assert_eq!(run.task.status, TaskStatus::Cancelled);
        assert_eq!(run.status("draft-ko"), StepStatus::InProgress);
        assert_eq!(run.status("review"), StepStatus::Cancelled);
        let err = run.task.start(&mut [], at(4)).unwrap_err();
        assert_eq!(err.event, "start");
        assert!(run.task.cancel(&mut [], None, at(4)).is_err());
    }

    #[test]
    fn transitions_refuse_steps_in_the_wrong_state() {
        let mut run = Run::new(blog());
        run.start();
        let mut review = run.steps["review"].clone();
        let err = run
            .task
            .step_completed(&mut review, &mut [], "x", None, at(2))
            .unwrap_err();
        assert!(err.to_string().contains("review is Pending"), "{err}");
        assert!(run.task.step_claimed(&mut review, "w", at(2)).is_err());
        assert!(
            run.task
                .resolve(&mut review, &mut [], &mut [], true, at(2))
                .is_err()
        );
        assert!(run.task.resume(&mut [], at(2)).is_err());
    }

    #[test]
    fn an_empty_plan_completes_when_started_and_bad_tasks_are_refused_whole() {
        let mut run = Run::new(Vec::new());
        run.start();
        assert_eq!(run.task.status, TaskStatus::Completed);

        let bad = NewTask {
            name: " ".into(),
            goal: " ".into(),
            steps: vec![StepSpec::new("a", "A", "w").after(["a"])],
            escalate_to: Some("\n".into()),
            ..NewTask::default()
        };
        let err = create(bad, "t/../x".into(), at(0), &Limits::default()).unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            ["id", "name", "goal", "escalate_to", "steps[0].dependencies"]
        );

        // JSON nested deeper than any reader reads back, or too large, is refused.
        let mut deep = serde_json::json!(1);
        for _ in 0..200 {
            deep = serde_json::json!([deep]);
        }
        let mut context = Metadata::new();
        context.insert("deep".into(), deep);
        let mut metadata = Metadata::new();
        metadata.insert("big".into(), Value::String("x".repeat(300 * 1024)));
        let err = create(
            NewTask {
                name: "n".into(),
                goal: "g".into(),
                context,
                metadata,
                ..NewTask::default()
            },
            "t2".into(),
            at(0),
            &Limits::default(),
        )
        .unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["context", "metadata"]);
    }

    #[test]
    fn a_completion_reads_only_its_dependents() {
        // A wide plan: one root, a thousand steps after it, one step after all of those.
        let mut specs = vec![StepSpec::new("root", "Root", "w")];
        specs.extend((0..1000).map(|i| StepSpec::new(format!("s{i}"), "S", "w").after(["root"])));
        specs.push(StepSpec::new("end", "End", "w").after((0..1000).map(|i| format!("s{i}"))));
        let mut run = Run::new(specs);
        run.start();
        run.with("root", |t, s, _| t.step_claimed(s, "w", at(2)));
        let fanned = run.with("root", |t, s, d| t.step_completed(s, d, "", None, at(3)));
        assert_eq!(fanned.offer.len(), 1000);
        for i in 0..1000 {
            let id = format!("s{i}");
            run.with(&id, |t, s, _| t.step_claimed(s, "w", at(4)));
            // Each completion is given one dependent, `end`, whatever the plan's size.
            let e = run.with(&id, |t, s, d| {
                assert_eq!(d.len(), 1);
                t.step_completed(s, d, "", None, at(5))
            });
            assert_eq!(e.offer.is_empty(), i < 999);
        }
        assert_eq!(run.steps["end"].waiting_on, 0);
        assert_eq!(run.task.steps_open, 1);
    }
}
