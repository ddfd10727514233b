//! Tasks: a goal and a plan whose steps run as handoffs, their log, history and statistics, as
//! plain objects (the core's [`handoff_core::task`] and [`handoff_core::store::Task`]).

use handoff_core::Metadata;
use handoff_core::store::Task;
use handoff_core::task::{
    HistoryEntry, HistoryMetrics, Member, StepState, TaskChange, TaskEvent, TaskHeader,
    TaskStatistics,
};
use napi_derive::napi;
use serde::Serialize;
use serde_json::Value;

use crate::convert::MAX_SAFE_INTEGER;
use crate::record::iso;
use crate::task::Mirror;

/// A count or version as a JavaScript number (exact below 2^53, far beyond any real count).
pub(crate) fn number(n: impl TryInto<u64>) -> f64 {
    n.try_into()
        .map_or(MAX_SAFE_INTEGER, |n: u64| (n as f64).min(MAX_SAFE_INTEGER))
}

/// A serialisable enum's JSON word (`in_progress`, `step_offered`, `success`).
pub(crate) fn word<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An agent that joined a task (`joinTask`).
#[napi(
    object,
    js_name = "TaskMember",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTaskMember {
    /// The agent.
    pub agent: String,
    /// Its role in the task (`investigator`, `reviewer`, ...), if it gave one.
    pub role: Option<String>,
    /// The ids of the steps assigned to it when it joined.
    pub objectives: Vec<String>,
    /// Its branch: `task/<taskId>/<agent>`.
    pub branch: String,
    /// When it joined (ISO 8601).
    pub joined_at: String,
}

impl Mirror for Member {
    type Out = JsTaskMember;
    fn mirror(self) -> JsTaskMember {
        let Member {
            agent,
            role,
            objectives,
            branch,
            joined_at,
        } = self;
        JsTaskMember {
            agent,
            role,
            objectives,
            branch,
            joined_at: iso(joined_at),
        }
    }
}

/// A task without its steps, as `listTasks` returns it.
#[napi(
    object,
    js_name = "TaskSummary",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTaskSummary {
    /// The task's id.
    pub id: String,
    /// What it is called.
    pub name: String,
    /// Where it stands.
    #[napi(ts_type = "TaskStatus")]
    pub status: String,
    /// Grows by one with every change: what `updateTask` compares (`expectedVersion`).
    pub version: f64,
    /// What it must achieve.
    pub goal: String,
    /// How to tell that the goal is reached.
    pub success_criteria: Vec<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it was first started (ISO 8601).
    pub started_at: Option<String>,
    /// When it last changed (ISO 8601).
    pub updated_at: String,
    /// When it finished (ISO 8601).
    pub completed_at: Option<String>,
    /// The agent that drives it: the sender of its steps' handoffs.
    pub orchestrator: Option<String>,
    /// Who gets a step that failed on every attempt.
    pub escalate_to: String,
    /// Context every step shares.
    #[napi(ts_type = "JsonObject")]
    pub context: Metadata,
    /// What it produced.
    #[napi(ts_type = "JsonValue[]")]
    pub artifacts: Vec<Value>,
    /// What went wrong along the way.
    #[napi(ts_type = "JsonValue[]")]
    pub issues: Vec<Value>,
    /// The caller's own data (`lessons`, a list, goes to its history).
    #[napi(ts_type = "JsonObject")]
    pub metadata: Metadata,
    /// Steps in the plan.
    pub steps_total: f64,
    /// Steps neither completed nor skipped nor cancelled.
    pub steps_open: f64,
    /// Steps completed or skipped.
    pub steps_done: f64,
    /// Steps skipped.
    pub skipped: f64,
    /// Failed attempts, over all its steps, retried or not.
    pub retries: f64,
    /// The model tokens its steps took, as their workers reported them to `complete`
    /// (`tokensUsed`); `null` when none did.
    pub tokens_used: Option<f64>,
    /// Its steps and log were pruned (`prune`): only this summary, its history, is left.
    pub pruned: bool,
    /// The agents that joined it (`joinTask`), in the order they joined.
    pub members: Vec<JsTaskMember>,
    /// What came of it, as whoever completed it said (`completeTask`'s `resultSummary`).
    pub result_summary: Option<String>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
}

/// One step of a task's plan and where it stands.
#[napi(
    object,
    js_name = "TaskStep",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTaskStep {
    /// The step's id, unique in its plan.
    pub id: String,
    /// What the step is, in words.
    pub name: String,
    /// The agent that works on it: its handoff is addressed to this agent. `null` for an
    /// objective nobody was assigned (`createTask`'s `objectives`): it is offered to the
    /// task's members, and `joinTask` assigns it.
    pub agent: Option<String>,
    /// The ids of the steps that must be done before this one is offered.
    pub dependencies: Vec<String>,
    /// Where it stands.
    #[napi(ts_type = "StepStatus")]
    pub status: String,
    /// Failed attempts of its current offer.
    pub attempts: f64,
    /// How often it is tried before it is escalated.
    pub max_attempts: f64,
    /// The handoff that carries its current offer: what a worker claims.
    pub handoff_id: Option<String>,
    /// The escalation that waits for a decision on it, while it is escalated.
    pub escalation_id: Option<String>,
    /// When a worker first took it (ISO 8601).
    pub started_at: Option<String>,
    /// When it was done (ISO 8601).
    pub completed_at: Option<String>,
    /// What came of it: its handoff's outcome.
    pub output: Option<String>,
    /// What went wrong last.
    pub error: Option<String>,
    /// The model tokens it took, as its worker reported them to `complete`.
    pub tokens_used: Option<f64>,
    /// The group of agents it belongs to.
    pub cluster: Option<String>,
    /// What the agent is to do, carried by the step's handoff.
    pub instructions: Option<String>,
}

/// A task: its summary, its steps in plan order, and the steps offered or under way.
#[napi(
    object,
    js_name = "Task",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTask {
    /// The task's id.
    pub id: String,
    /// What it is called.
    pub name: String,
    /// Where it stands.
    #[napi(ts_type = "TaskStatus")]
    pub status: String,
    /// Grows by one with every change: what `updateTask` compares (`expectedVersion`).
    pub version: f64,
    /// What it must achieve.
    pub goal: String,
    /// How to tell that the goal is reached.
    pub success_criteria: Vec<String>,
    /// The plan's steps, in plan order.
    pub steps: Vec<JsTaskStep>,
    /// The ids of the steps offered or under way (`ready` or `in_progress`), in plan order.
    pub current_steps: Vec<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it was first started (ISO 8601).
    pub started_at: Option<String>,
    /// When it last changed (ISO 8601).
    pub updated_at: String,
    /// When it finished (ISO 8601).
    pub completed_at: Option<String>,
    /// The agent that drives it: the sender of its steps' handoffs.
    pub orchestrator: Option<String>,
    /// Who gets a step that failed on every attempt.
    pub escalate_to: String,
    /// Context every step shares.
    #[napi(ts_type = "JsonObject")]
    pub context: Metadata,
    /// What it produced.
    #[napi(ts_type = "JsonValue[]")]
    pub artifacts: Vec<Value>,
    /// What went wrong along the way.
    #[napi(ts_type = "JsonValue[]")]
    pub issues: Vec<Value>,
    /// The caller's own data (`lessons`, a list, goes to its history).
    #[napi(ts_type = "JsonObject")]
    pub metadata: Metadata,
    /// Steps in the plan.
    pub steps_total: f64,
    /// Steps neither completed nor skipped nor cancelled.
    pub steps_open: f64,
    /// Steps completed or skipped.
    pub steps_done: f64,
    /// Steps skipped.
    pub skipped: f64,
    /// Failed attempts, over all its steps, retried or not.
    pub retries: f64,
    /// The model tokens its steps took, as their workers reported them to `complete`
    /// (`tokensUsed`); `null` when none did.
    pub tokens_used: Option<f64>,
    /// Its steps and log were pruned (`prune`): only its summary, its history, is left.
    pub pruned: bool,
    /// The agents that joined it (`joinTask`), in the order they joined.
    pub members: Vec<JsTaskMember>,
    /// What came of it, as whoever completed it said (`completeTask`'s `resultSummary`).
    pub result_summary: Option<String>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
}

impl Mirror for TaskHeader {
    type Out = JsTaskSummary;
    fn mirror(self) -> JsTaskSummary {
        // Destructured in full: a field the core adds fails to compile here until it is
        // mapped (or left out, as the store's own bookkeeping is).
        let TaskHeader {
            id,
            name,
            status,
            version,
            created_at,
            started_at,
            updated_at,
            completed_at,
            orchestrator,
            escalate_to,
            goal,
            success_criteria,
            context,
            artifacts,
            issues,
            metadata,
            steps_total,
            steps_open,
            steps_done,
            skipped,
            retries,
            tokens_used,
            pruned,
            members,
            result_summary,
            failure,
            events: _,
            roots: _,
            waiting: _,
        } = self;
        JsTaskSummary {
            id,
            name,
            status: word(&status),
            version: number(version),
            goal,
            success_criteria,
            created_at: iso(created_at),
            started_at: started_at.map(iso),
            updated_at: iso(updated_at),
            completed_at: completed_at.map(iso),
            orchestrator,
            escalate_to,
            context,
            artifacts,
            issues,
            metadata,
            steps_total: number(steps_total),
            steps_open: number(steps_open),
            steps_done: number(steps_done),
            skipped: number(skipped),
            retries: number(retries),
            tokens_used: tokens_used.map(number),
            pruned,
            members: members.mirror(),
            result_summary,
            failure,
        }
    }
}

impl Mirror for StepState {
    type Out = JsTaskStep;
    fn mirror(self) -> JsTaskStep {
        let max_attempts = self.spec.attempts();
        let StepState {
            position: _,
            spec,
            dependents: _,
            waiting_on: _,
            status,
            attempts,
            handoff_id,
            escalation_id,
            started_at,
            completed_at,
            output,
            error,
            tokens_used,
            start_to_log: _,
        } = self;
        JsTaskStep {
            id: spec.id,
            name: spec.name,
            agent: spec.agent,
            dependencies: spec.dependencies,
            status: word(&status),
            attempts: number(attempts),
            max_attempts: number(max_attempts),
            handoff_id,
            escalation_id,
            started_at: started_at.map(iso),
            completed_at: completed_at.map(iso),
            output,
            error,
            tokens_used: tokens_used.map(number),
            cluster: spec.cluster,
            instructions: spec.instructions,
        }
    }
}

impl Mirror for Task {
    type Out = JsTask;
    fn mirror(self) -> JsTask {
        let current_steps = self
            .current_steps()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let summary = self.header.mirror();
        JsTask {
            id: summary.id,
            name: summary.name,
            status: summary.status,
            version: summary.version,
            goal: summary.goal,
            success_criteria: summary.success_criteria,
            steps: self.steps.mirror(),
            current_steps,
            created_at: summary.created_at,
            started_at: summary.started_at,
            updated_at: summary.updated_at,
            completed_at: summary.completed_at,
            orchestrator: summary.orchestrator,
            escalate_to: summary.escalate_to,
            context: summary.context,
            artifacts: summary.artifacts,
            issues: summary.issues,
            metadata: summary.metadata,
            steps_total: summary.steps_total,
            steps_open: summary.steps_open,
            steps_done: summary.steps_done,
            skipped: summary.skipped,
            retries: summary.retries,
            tokens_used: summary.tokens_used,
            pruned: summary.pruned,
            members: summary.members,
            result_summary: summary.result_summary,
            failure: summary.failure,
        }
    }
}

/// One entry of a task's log.
#[napi(
    object,
    js_name = "TaskEvent",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTaskEvent {
    /// Its place in the task's log, from 1.
    pub seq: f64,
    /// The task.
    pub task_id: String,
    /// When it happened (ISO 8601).
    pub at: String,
    /// Who caused it: the worker of a step's handoff, the holder of an escalation; `null` for
    /// the caller of a task operation, and for the clock.
    pub actor: Option<String>,
    /// What happened.
    #[napi(ts_type = "TaskEventKind")]
    pub kind: String,
    /// The event's details; which keys are present depends on `kind`.
    pub detail: TaskEventDetail,
}

/// Details of a task event. `step_offered`, `step_completed`, `step_skipped`: `step`;
/// `step_escalated`: `step`, and `to` when its holder handed it on (`escalateStep`);
/// `step_started`: `step`, `agent`; `step_failed`: `step`, `error`, `last`; `agent_join`:
/// `agent`, `role` (when given), `objectives` (when assigned); `updated`: `version`;
/// `cancelled`: `reason` (when given); `failed`: `reason`; `merge`: `into`, `facts`,
/// `conversations`; the others: nothing.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskEventDetail {
    /// The step it concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The worker who took the step (step_started), the agent that joined (agent_join).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Whom the step's holder handed it on to (step_escalated by `escalateStep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The role the agent joined with (agent_join).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The steps assigned to the agent that joined (agent_join).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objectives: Option<Vec<String>>,
    /// What went wrong (step_failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether it was the step's last allowed attempt (step_failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<bool>,
    /// The task's version after the change (updated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<f64>,
    /// Why (cancelled, failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The branch the task's verified knowledge was merged into (merge): `main`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
    /// How many facts were merged (merge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<f64>,
    /// How many conversations were merged (merge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversations: Option<f64>,
}

impl Mirror for TaskEvent {
    type Out = JsTaskEvent;
    fn mirror(self) -> JsTaskEvent {
        let kind = self.change.kind().to_owned();
        let mut detail = TaskEventDetail::default();
        match self.change {
            TaskChange::StepOffered { step }
            | TaskChange::StepCompleted { step }
            | TaskChange::StepSkipped { step } => detail.step = Some(step),
            TaskChange::StepEscalated { step, to } => {
                detail.step = Some(step);
                detail.to = to;
            }
            TaskChange::AgentJoin {
                agent,
                role,
                objectives,
            } => {
                detail.agent = Some(agent);
                detail.role = role;
                detail.objectives = (!objectives.is_empty()).then_some(objectives);
            }
            TaskChange::Failed { reason } => detail.reason = Some(reason),
            TaskChange::Merge {
                into,
                facts,
                conversations,
            } => {
                detail.into = Some(into);
                detail.facts = Some(number(facts));
                detail.conversations = Some(number(conversations));
            }
            TaskChange::StepStarted { step, agent } => {
                detail.step = Some(step);
                detail.agent = Some(agent);
            }
            TaskChange::StepFailed { step, error, last } => {
                detail.step = Some(step);
                detail.error = Some(error);
                detail.last = Some(last);
            }
            TaskChange::Updated { version } => detail.version = Some(number(version)),
            TaskChange::Cancelled { reason } => detail.reason = reason,
            // Listed in full: a new kind of event fails to compile here until it is mapped.
            TaskChange::Created
            | TaskChange::Started
            | TaskChange::Paused
            | TaskChange::Resumed
            | TaskChange::Completed => {}
        }
        JsTaskEvent {
            seq: number(self.seq),
            task_id: self.task_id,
            at: iso(self.at),
            actor: self.actor,
            kind,
            detail,
        }
    }
}

/// The numbers of a finished task.
#[napi(
    object,
    js_name = "HistoryMetrics",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsHistoryMetrics {
    /// Steps in the plan.
    pub steps_total: f64,
    /// Steps done (completed or skipped).
    pub steps_completed: f64,
    /// Failed attempts, over all its steps.
    pub retries: f64,
    /// The model tokens its steps took, as their workers reported them; `null` when none did.
    pub tokens_used: Option<f64>,
}

/// A finished task, as `taskHistory` lists it.
#[napi(
    object,
    js_name = "HistoryEntry",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsHistoryEntry {
    /// The task.
    pub id: String,
    /// Its name.
    pub name: String,
    /// How it ended: `success`, `partial` (steps skipped) or `failure` (cancelled or failed).
    #[napi(ts_type = "'success' | 'partial' | 'failure'")]
    pub result: String,
    /// When it started (ISO 8601); `null` when it was cancelled before it started.
    pub started_at: Option<String>,
    /// When it finished (ISO 8601).
    pub completed_at: String,
    /// From start to finish, in seconds.
    pub duration_seconds: Option<f64>,
    /// Its goal.
    pub summary: String,
    /// What it produced.
    #[napi(ts_type = "JsonValue[]")]
    pub artifacts: Vec<Value>,
    /// Its steps, retries and tokens.
    pub metrics: JsHistoryMetrics,
    /// What it taught: the task's `metadata.lessons`, when it holds a list.
    #[napi(ts_type = "JsonValue[]")]
    pub lessons: Vec<Value>,
}

impl Mirror for HistoryMetrics {
    type Out = JsHistoryMetrics;
    fn mirror(self) -> JsHistoryMetrics {
        let HistoryMetrics {
            steps_total,
            steps_completed,
            retries,
            tokens_used,
        } = self;
        JsHistoryMetrics {
            steps_total: number(steps_total),
            steps_completed: number(steps_completed),
            retries: number(retries),
            tokens_used: tokens_used.map(number),
        }
    }
}

impl Mirror for HistoryEntry {
    type Out = JsHistoryEntry;
    fn mirror(self) -> JsHistoryEntry {
        let HistoryEntry {
            id,
            name,
            result,
            started_at,
            completed_at,
            duration_seconds,
            summary,
            artifacts,
            metrics,
            lessons,
        } = self;
        JsHistoryEntry {
            id,
            name,
            result: word(&result),
            started_at: started_at.map(iso),
            completed_at: iso(completed_at),
            duration_seconds,
            summary,
            artifacts,
            metrics: metrics.mirror(),
            lessons,
        }
    }
}

/// Statistics over every finished task.
#[napi(
    object,
    js_name = "TaskStatistics",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTaskStatistics {
    /// Finished tasks.
    pub total_tasks: f64,
    /// The share of them that succeeded, from 0 to 1 (0 when there are none).
    pub success_rate: f64,
    /// The mean seconds from start to finish of those that started; `null` when none did.
    pub avg_duration_seconds: Option<f64>,
    /// How many ended each way (`success`, `partial`, `failure`); a way no task ended is left
    /// out.
    #[napi(ts_type = "Partial<Record<'success' | 'partial' | 'failure', number>>")]
    pub by_result: std::collections::BTreeMap<String, f64>,
}

impl Mirror for TaskStatistics {
    type Out = JsTaskStatistics;
    fn mirror(self) -> JsTaskStatistics {
        let TaskStatistics {
            total_tasks,
            success_rate,
            avg_duration_seconds,
            by_result,
        } = self;
        JsTaskStatistics {
            total_tasks: number(total_tasks),
            success_rate,
            avg_duration_seconds,
            by_result: by_result
                .into_iter()
                .map(|(result, n)| (result, number(n)))
                .collect(),
        }
    }
}
