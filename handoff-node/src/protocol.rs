//! The manager/worker protocol (the core's [`handoff_core::protocol`]): a run as it stands and
//! the runs' statistics, as plain objects. The messages themselves are handoffs whose
//! `protocol` body is kept in the seed's form (see [`crate::record`]), as is a run's history.

use handoff_core::protocol::{HistoryItem, ProtocolStats, Run, RunSummary};
use napi_derive::napi;
use serde::Serialize;

use crate::record::iso;
use crate::task::Mirror;
use crate::tasks::{number, word};

/// A task's manager/worker run as it stands: what `protocolRun(taskId)` returns.
#[napi(
    object,
    js_name = "ProtocolRun",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsProtocolRun {
    /// The task it works on.
    pub task_id: String,
    /// The agent that reviews and decides.
    pub manager: String,
    /// The agent that does the work.
    pub worker: String,
    /// Who gets an escalation.
    pub escalate_to: String,
    /// What the run is for: the initialization's instructions (every message's `goal`).
    pub goal: String,
    /// How success is judged, as the initialization gave it.
    pub success_criteria: Vec<String>,
    /// The handoff whose holder makes the next call; `null` once the run is completed.
    pub message_id: Option<String>,
    /// Who holds the latest message, and so which calls are valid.
    #[napi(ts_type = "ProtocolPhase")]
    pub phase: String,
    /// The iteration under way, from 1.
    pub iteration: f64,
    /// Iterations allowed before a CONTINUE or REFINE escalates instead.
    pub max_iterations: f64,
    /// Recoveries so far.
    pub retry_count: f64,
    /// Recoveries allowed before the run escalates by itself.
    pub max_retries: f64,
    /// Escalations so far.
    pub escalations: f64,
    /// Every iteration, the current one last, in the seed's form (as an escalation's
    /// `complete_history` recounts them).
    #[napi(ts_type = "HistoryItem[]")]
    pub history: Vec<HistoryItem>,
    /// How long each closed entry of `history` took, in seconds, in order.
    pub iteration_seconds: Vec<f64>,
    /// Every file the worker reported changing, in the order first reported.
    pub files_modified: Vec<String>,
    /// The last report's status and what it accomplished, in words.
    pub project_status: String,
    /// Dependencies the manager's context updates added so far, in order.
    pub dependencies: Vec<String>,
    /// The initialization's settings, in words (`project root: …`, `constraint: …`).
    pub configuration: Vec<String>,
    /// When the run was initialized (ISO 8601).
    pub started_at: String,
    /// When the last call changed it (ISO 8601).
    pub updated_at: String,
    /// When the iteration under way (or its last recovery) started (ISO 8601).
    pub iteration_started_at: String,
}

impl Mirror for Run {
    type Out = JsProtocolRun;
    fn mirror(self) -> JsProtocolRun {
        // Destructured in full: a field the core adds fails to compile here until it is mapped.
        let Run {
            task_id,
            manager,
            worker,
            escalate_to,
            goal,
            success_criteria,
            message_id,
            started_at,
            updated_at,
            iteration_started_at,
            iteration_seconds,
            iteration,
            max_iterations,
            retry_count,
            max_retries,
            phase,
            escalations,
            history,
            files_modified,
            project_status,
            dependencies,
            configuration,
        } = self;
        JsProtocolRun {
            task_id,
            manager,
            worker,
            escalate_to,
            goal,
            success_criteria,
            message_id,
            phase: word(&phase),
            iteration: number(iteration),
            max_iterations: number(max_iterations),
            retry_count: number(retry_count),
            max_retries: number(max_retries),
            escalations: number(escalations),
            history,
            iteration_seconds,
            files_modified,
            project_status,
            dependencies,
            configuration,
            started_at: iso(started_at),
            updated_at: iso(updated_at),
            iteration_started_at: iso(iteration_started_at),
        }
    }
}

/// One run as `protocolStats` counts it.
#[napi(
    object,
    js_name = "RunSummary",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsRunSummary {
    /// The run's task.
    pub task_id: String,
    /// Who holds its latest message (`completed` once the manager completed it).
    #[napi(ts_type = "ProtocolPhase")]
    pub phase: String,
    /// Iterations so far.
    pub iterations: f64,
    /// Recoveries so far.
    pub retries: f64,
    /// Escalations so far.
    pub escalations: f64,
    /// When it started (ISO 8601).
    pub started_at: String,
    /// When it last changed (ISO 8601).
    pub updated_at: String,
}

impl Mirror for RunSummary {
    type Out = JsRunSummary;
    fn mirror(self) -> JsRunSummary {
        let RunSummary {
            task_id,
            phase,
            iterations,
            retries,
            escalations,
            started_at,
            updated_at,
        } = self;
        JsRunSummary {
            task_id,
            phase: word(&phase),
            iterations: number(iterations),
            retries: number(retries),
            escalations: number(escalations),
            started_at: iso(started_at),
            updated_at: iso(updated_at),
        }
    }
}

/// How the store's protocol runs went: what `protocolStats()` returns.
#[napi(
    object,
    js_name = "ProtocolStats",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsProtocolStats {
    /// Runs started.
    pub runs: f64,
    /// Runs the manager completed.
    pub completed: f64,
    /// Completed runs that needed one iteration, no recovery and no human.
    pub first_try_completions: f64,
    /// `firstTryCompletions / completed`, from 0 to 1 (0 when none completed).
    pub first_try_completion_rate: f64,
    /// Runs escalated to a human at least once.
    pub escalated: f64,
    /// `escalated / runs`, from 0 to 1 (0 when there are none).
    pub escalation_rate: f64,
    /// Recoveries over every run.
    pub retries: f64,
    /// Iterations per run, on average.
    pub mean_iterations: f64,
    /// The median time an iteration (or a recovery) took, from its instructions to the
    /// manager's answer, in seconds; `null` before any closed.
    pub median_iteration_seconds: Option<f64>,
    /// Every run, oldest first.
    pub per_run: Vec<JsRunSummary>,
}

impl Mirror for ProtocolStats {
    type Out = JsProtocolStats;
    fn mirror(self) -> JsProtocolStats {
        let ProtocolStats {
            runs,
            completed,
            first_try_completions,
            first_try_completion_rate,
            escalated,
            escalation_rate,
            retries,
            mean_iterations,
            median_iteration_seconds,
            per_run,
        } = self;
        JsProtocolStats {
            runs: number(runs),
            completed: number(completed),
            first_try_completions: number(first_try_completions),
            first_try_completion_rate,
            escalated: number(escalated),
            escalation_rate,
            retries: number(retries),
            mean_iterations,
            median_iteration_seconds,
            per_run: per_run.mirror(),
        }
    }
}
