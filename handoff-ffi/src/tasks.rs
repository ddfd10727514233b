//! Tasks (docs/design.md §7) as the foreign languages see them: a plan's steps as a caller gives them
//! ([`StepSpec`]), a task with its steps ([`Task`]), its summary, its log, its history and the
//! statistics over finished tasks. JSON objects and values (context, metadata, artifacts, a log
//! entry's detail) cross as JSON text, as a handoff's `metadata` does.

use std::collections::HashMap;
use std::time::SystemTime;

use handoff_core as core;
use handoff_core::task;
use serde::Serialize;
use serde_json::Value;

use crate::arguments::{object_to_text, text};
use crate::record::time;

pub use handoff_core::task::{
    HistoryEntry, HistoryMetrics, Member as TaskMember, StepStatus, TaskHeader as TaskSummary,
    TaskResult, TaskStatus,
};

/// One step of a plan as a caller gives it: the names of the seed's `task-state.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, uniffi::Record)]
pub struct StepSpec {
    /// The step's id, unique in its plan (an id: `[A-Za-z0-9._:@-]{1,128}`).
    pub id: String,
    /// What the step is, in words.
    pub name: String,
    /// The agent that works on it: its handoff is addressed to this agent. None: an objective
    /// of the task, offered to its members (`join_task` assigns it).
    #[uniffi(default)]
    pub agent: Option<String>,
    /// The ids of the steps that must be completed before this one is offered.
    #[uniffi(default)]
    pub dependencies: Vec<String>,
    /// What the agent is to do, carried by the step's handoff.
    #[uniffi(default)]
    pub instructions: Option<String>,
    /// How often the step is tried before it is escalated; none is 3 (at most 100).
    #[uniffi(default)]
    pub max_attempts: Option<u32>,
    /// The group of agents the step belongs to, as the seed's plans name it.
    #[uniffi(default)]
    pub cluster: Option<String>,
}

/// One step of a task, as it stands.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct TaskStep {
    /// The step's id.
    pub id: String,
    /// What the step is, in words.
    pub name: String,
    /// The agent that works on it (none: any member of the task).
    pub agent: Option<String>,
    /// The steps it waits for.
    pub dependencies: Vec<String>,
    /// What the agent is to do.
    pub instructions: Option<String>,
    /// The group of agents it belongs to.
    pub cluster: Option<String>,
    /// Where it stands.
    pub status: StepStatus,
    /// Attempts that failed (reset when a human retries it).
    pub attempts: u32,
    /// How often it is tried before it is escalated.
    pub max_attempts: u32,
    /// The handoff that carries its current offer, once offered.
    pub handoff_id: Option<String>,
    /// When a worker first took it.
    pub started_at: Option<SystemTime>,
    /// When it finished.
    pub completed_at: Option<SystemTime>,
    /// The worker's result (its handoff's outcome).
    pub output: Option<String>,
    /// The last failure, as the worker said it.
    pub error: Option<String>,
    /// The model tokens its work took, as its workers reported them; none when none did.
    pub tokens_used: Option<u64>,
}

/// A task: its goal, its plan's steps and where each stands. `task_json` is the task in the
/// seed's `task-state.json` form, the same in every binding.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Task {
    /// The task's id.
    pub id: String,
    /// What it is called.
    pub name: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Grows with every change to the task itself: what `update_task` compares.
    pub version: u64,
    /// When it was created.
    pub created_at: SystemTime,
    /// When it started.
    pub started_at: Option<SystemTime>,
    /// When it last changed.
    pub updated_at: SystemTime,
    /// When it finished.
    pub completed_at: Option<SystemTime>,
    /// The agent that drives it, the sender of its steps' handoffs.
    pub orchestrator: Option<String>,
    /// Who gets a step that failed on every attempt.
    pub escalate_to: String,
    /// What it must achieve.
    pub goal: String,
    /// How to tell that the goal is reached.
    pub success_criteria: Vec<String>,
    /// The context every step shares: a JSON object, as text.
    pub context: String,
    /// What it produced: JSON values, each as text.
    pub artifacts: Vec<String>,
    /// What went wrong along the way: JSON values, each as text.
    pub issues: Vec<String>,
    /// Free-form metadata: a JSON object, as text.
    pub metadata: String,
    /// Steps in the plan.
    pub steps_total: u64,
    /// Steps not yet done.
    pub steps_open: u64,
    /// Steps done (completed or skipped).
    pub steps_done: u64,
    /// Steps skipped.
    pub skipped: u64,
    /// Failed attempts of any step.
    pub retries: u32,
    /// The model tokens its steps took, as their workers reported them; none when none did.
    pub tokens_used: Option<u64>,
    /// Entries in its log (`Store.task_events`).
    pub events: u64,
    /// Whether `Store.prune` removed its steps and log.
    pub pruned: bool,
    /// The agents that joined it (`join_task`), in the order they joined.
    pub members: Vec<TaskMember>,
    /// What came of it, as whoever completed it said (`complete_task`).
    pub result_summary: Option<String>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// Its steps, in plan order.
    pub steps: Vec<TaskStep>,
    /// The task in the seed's `task-state.json` form (`plan.goal`, `plan.steps[].dependencies`,
    /// `plan.current_steps`, ...), as JSON text: what Python's `Task.to_dict()` gives.
    pub task_json: String,
}

/// One entry of a task's log.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct TaskEvent {
    /// Its place in the task's log, from 1.
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// When it happened.
    pub at: SystemTime,
    /// Who caused it: the worker of a step's handoff, the holder of an escalation; none for
    /// the caller of a task operation, and for the clock.
    pub actor: Option<String>,
    /// What happened: `created`, `started`, `step_offered`, `step_started`, `step_completed`,
    /// `step_failed`, `step_escalated`, `step_skipped`, `agent_join`, `paused`, `resumed`,
    /// `updated`, `cancelled`, `completed`, `failed`, `merge`.
    pub kind: String,
    /// The details of `kind` (`{"step": "draft"}`, `{"step", "error", "last"}`, ...): a JSON
    /// object, as text; `{}` when it has none.
    pub detail: String,
}

/// Statistics over every finished task.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct TaskStatistics {
    /// Finished tasks.
    pub total_tasks: u64,
    /// The share of them that succeeded (0 when there are none).
    pub success_rate: f64,
    /// The mean time from start to finish of those that started, in seconds.
    pub avg_duration_seconds: Option<f64>,
    /// How many ended each way (`success`, `partial`, `failure`).
    pub by_result: HashMap<String, u64>,
}

fn count(n: usize) -> u64 {
    n as u64
}

fn texts(values: Vec<Value>) -> Vec<String> {
    values.into_iter().map(text).collect()
}

impl From<core::store::Task> for Task {
    fn from(task: core::store::Task) -> Self {
        let task_json = task.to_value().to_string();
        let h = task.header;
        Task {
            id: h.id,
            name: h.name,
            status: h.status,
            version: h.version,
            created_at: time(h.created_at),
            started_at: h.started_at.map(time),
            updated_at: time(h.updated_at),
            completed_at: h.completed_at.map(time),
            orchestrator: h.orchestrator,
            escalate_to: h.escalate_to,
            goal: h.goal,
            success_criteria: h.success_criteria,
            context: object_to_text(h.context),
            artifacts: texts(h.artifacts),
            issues: texts(h.issues),
            metadata: object_to_text(h.metadata),
            steps_total: count(h.steps_total),
            steps_open: count(h.steps_open),
            steps_done: count(h.steps_done),
            skipped: count(h.skipped),
            retries: h.retries,
            tokens_used: h.tokens_used,
            events: h.events,
            pruned: h.pruned,
            members: h.members,
            result_summary: h.result_summary,
            failure: h.failure,
            steps: task.steps.into_iter().map(TaskStep::from).collect(),
            task_json,
        }
    }
}

impl From<task::StepState> for TaskStep {
    fn from(step: task::StepState) -> Self {
        let max_attempts = step.spec.attempts();
        let spec = step.spec;
        TaskStep {
            id: spec.id,
            name: spec.name,
            agent: spec.agent,
            dependencies: spec.dependencies,
            instructions: spec.instructions,
            cluster: spec.cluster,
            status: step.status,
            attempts: step.attempts,
            max_attempts,
            handoff_id: step.handoff_id,
            started_at: step.started_at.map(time),
            completed_at: step.completed_at.map(time),
            output: step.output,
            error: step.error,
            tokens_used: step.tokens_used,
        }
    }
}

impl From<task::TaskEvent> for TaskEvent {
    fn from(event: task::TaskEvent) -> Self {
        let kind = event.change.kind().to_owned();
        let detail = event.change.detail();
        TaskEvent {
            seq: event.seq,
            task_id: event.task_id,
            at: time(event.at),
            actor: event.actor,
            kind,
            detail: detail.map_or_else(|| "{}".to_owned(), text),
        }
    }
}

impl From<task::TaskStatistics> for TaskStatistics {
    fn from(stats: task::TaskStatistics) -> Self {
        TaskStatistics {
            total_tasks: count(stats.total_tasks),
            success_rate: stats.success_rate,
            avg_duration_seconds: stats.avg_duration_seconds,
            by_result: stats
                .by_result
                .into_iter()
                .map(|(result, n)| (result, count(n)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{HandoffError, OpenOptions, Store};

    fn step(id: &str, agent: &str, dependencies: &[&str]) -> StepSpec {
        StepSpec {
            id: id.into(),
            name: id.into(),
            agent: Some(agent.into()),
            dependencies: dependencies.iter().map(|d| (*d).to_owned()).collect(),
            instructions: None,
            max_attempts: None,
            cluster: None,
        }
    }

    fn plan() -> Vec<StepSpec> {
        vec![
            step("research", "researcher", &[]),
            step("draft-ko", "writer", &["research"]),
            step("review", "reviewer", &["draft-ko"]),
        ]
    }

    fn create(store: &Store, steps: Vec<StepSpec>) -> crate::error::Result<Task> {
        store.create_task(
            "Blog post".into(),
            "A bilingual post".into(),
            steps,
            vec!["published".into()],
            Some(r#"{"user_request": "write it"}"#.into()),
            None,
            None,
            None,
            None,
            Vec::new(),
        )
    }

    /// One description: a step given here carries the core's step fields under their names.
    #[test]
    fn a_step_spec_is_the_cores() {
        let ours = StepSpec {
            instructions: Some("in Korean".into()),
            max_attempts: Some(2),
            cluster: Some("content".into()),
            ..step("draft", "writer", &["research"])
        };
        let theirs: core::plan::StepSpec =
            serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
        assert_eq!(theirs.dependencies, ["research"]);
        assert_eq!(theirs.max_attempts, Some(2));
        assert_eq!(theirs.cluster.as_deref(), Some("content"));
    }

    #[test]
    fn a_plan_runs_step_by_step() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let task = create(&store, plan()).unwrap();
        assert_eq!(task.status, TaskStatus::Pending);
        assert_eq!(task.context, r#"{"user_request":"write it"}"#);
        let task = store.start_task(task.id).unwrap();
        assert_eq!(task.steps[0].status, StepStatus::Ready);

        let claim = store
            .claim_next("researcher".into(), None, None, None)
            .unwrap()
            .unwrap();
        store
            .complete(claim.reference(), "notes".into(), Some(1200))
            .unwrap();
        let task = store.get_task(task.id).unwrap();
        assert_eq!(task.steps[0].tokens_used, Some(1200));
        assert_eq!(task.tokens_used, Some(1200));
        assert_eq!(task.steps[1].status, StepStatus::Ready);
        let seed: Value = serde_json::from_str(&task.task_json).unwrap();
        assert_eq!(
            seed["plan"]["current_steps"],
            serde_json::json!(["draft-ko"])
        );
        assert_eq!(
            seed["plan"]["steps"][1]["dependencies"],
            serde_json::json!(["research"])
        );

        let draft = store
            .claim_next("writer".into(), None, None, None)
            .unwrap()
            .unwrap();
        let failed = store
            .fail_step(draft.reference(), "no model".into())
            .unwrap();
        assert_eq!(failed.attempts, 1);

        let events = store.task_events(task.id.clone()).unwrap();
        let completed = events.iter().find(|e| e.kind == "step_completed").unwrap();
        assert_eq!(completed.detail, r#"{"step":"research"}"#);
        assert_eq!(events[0].kind, "created");
        assert_eq!(events[0].detail, "{}");

        let listed = store
            .list_tasks(Some(TaskStatus::InProgress), None, None)
            .unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].steps_total, 3);
        store.pause_task(task.id.clone()).unwrap();
        store.resume_task(task.id.clone()).unwrap();
        let cancelled = store.cancel_task(task.id, Some("enough".into())).unwrap();
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        let history = store.task_history(None).unwrap();
        assert_eq!(history[0].result, TaskResult::Failure);
        let stats = store.task_statistics().unwrap();
        assert_eq!((stats.total_tasks, stats.by_result["failure"]), (1, 1));
        assert_eq!(store.prune(Some(0), Some(0)).unwrap(), 1);
    }

    #[test]
    fn a_bad_plan_reports_every_problem_and_writes_nothing() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let bad = vec![
            step("a", "researcher", &["c"]),
            step("a", "writer", &[]),
            step("b", "writer", &["ghost"]),
            step("c", "reviewer", &["a"]),
        ];
        let Err(HandoffError::Validation { problems, .. }) = create(&store, bad) else {
            panic!("a bad plan was accepted");
        };
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "steps[1].id",
                "steps[2].dependencies[0]",
                "steps[0].dependencies"
            ]
        );
        assert!(problems[2].rule.contains("a → c → a"), "{problems:?}");
        assert!(store.list_tasks(None, None, None).unwrap().is_empty());
    }

    #[test]
    fn a_stale_update_is_a_conflict_and_changes_nothing() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let task = create(&store, plan()).unwrap();
        let update = |version| {
            store.update_task(
                task.id.clone(),
                version,
                Some("Another goal".into()),
                None,
                None,
                Some(r#"{"lessons": ["x"]}"#.into()),
                vec![],
                Some(vec![r#"{"path": "post.md"}"#.into()]),
                None,
            )
        };
        let Err(HandoffError::Conflict {
            expected_version,
            actual_version,
            ..
        }) = update(task.version + 7)
        else {
            panic!("a stale update went through");
        };
        assert_eq!(
            (expected_version, actual_version),
            (Some(task.version + 7), Some(task.version))
        );
        assert_eq!(store.get_task(task.id.clone()).unwrap(), task);
        let updated = update(task.version).unwrap();
        assert_eq!(updated.goal, "Another goal");
        assert_eq!(updated.artifacts, [r#"{"path":"post.md"}"#]);

        let Err(HandoffError::Validation { problems, .. }) = store.update_task(
            task.id.clone(),
            updated.version,
            None,
            None,
            Some("[1]".into()),
            None,
            vec![],
            Some(vec!["{".into()]),
            None,
        ) else {
            panic!("bad JSON went through");
        };
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["context"]);
    }

    #[test]
    fn a_human_resolves_an_escalation() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let once = StepSpec {
            max_attempts: Some(1),
            ..step("research", "researcher", &[])
        };
        let task = create(&store, vec![once, step("draft", "writer", &["research"])]).unwrap();
        store.start_task(task.id.clone()).unwrap();
        let claim = store
            .claim_next("researcher".into(), None, None, None)
            .unwrap()
            .unwrap();
        store
            .fail_step(claim.reference(), "no sources".into())
            .unwrap();
        let task = store.get_task(task.id).unwrap();
        assert_eq!(
            (task.status, task.steps[0].status),
            (TaskStatus::Paused, StepStatus::Escalated)
        );
        let escalation = store
            .claim_next("human".into(), None, None, None)
            .unwrap()
            .unwrap();
        let task = store
            .resolve_escalation(escalation.reference(), "skip it".into(), false)
            .unwrap();
        assert_eq!(task.status, TaskStatus::InProgress);
        assert_eq!(task.steps[0].status, StepStatus::Skipped);
        assert_eq!(task.steps[1].status, StepStatus::Ready);
    }

    #[test]
    fn an_unknown_task_is_not_found() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let Err(HandoffError::NotFound { what, id, .. }) = store.get_task("nope".into()) else {
            panic!("found a task that is not there");
        };
        assert_eq!((what.as_str(), id.as_str()), ("task", "nope"));
    }
}
