//! The manager/worker protocol (docs/design.md §8, seed: dual-agent handoff mechanisms): the typed
//! `protocol` body its messages carry, with the seed's field names, the checks each direction
//! runs before anything is sent, and the run's state machine, pure like the handoff machine
//! ([`crate::machine`]): each call takes the run and the time and says which message to send
//! next, or why the call is refused.
//!
//! A run alternates between its two agents: the worker holds an instruction (the
//! initialization, a continuation, recovery steps) and answers with a report or an error
//! report; the manager holds that answer and decides, recovers or escalates; a human holds an
//! escalation and resolves it, which hands the run back to the manager.
//!
//! The folder: this file is the pure part; `store` keeps runs in the [`Store`](crate::Store),
//! `ops` the protocol's operations.

pub(crate) mod ops;
pub(crate) mod store;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Problem, Result};
use crate::handoff::status::Kind;
use crate::validate::{self, Collector};

/// Which of the protocol's four messages a body is (the seed's `handoff_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum HandoffType {
    /// Manager → worker: the task, its context and how success is judged.
    Initialization,
    /// A report (worker → manager), a decision to go on (manager → worker), or a human's
    /// resolution (human → manager).
    Progress,
    /// An error report (worker → manager) or recovery steps (manager → worker).
    ErrorRecovery,
    /// Manager → human: what blocks the run, its whole history and how to resume.
    Escalation,
}

impl HandoffType {
    /// The kind of the handoff that carries it.
    pub fn kind(self) -> Kind {
        match self {
            HandoffType::Initialization => Kind::Initialization,
            HandoffType::Progress => Kind::Progress,
            HandoffType::ErrorRecovery => Kind::ErrorRecovery,
            HandoffType::Escalation => Kind::Escalation,
        }
    }
}

/// How far the worker got (the seed's `worker_report.status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum WorkerStatus {
    /// Everything asked for is done.
    Completed,
    /// Some of it is done.
    Partial,
    /// None of it could be done.
    Failed,
}

/// The manager's decision on a report (the seed's `manager_decision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Decision {
    /// The task is finished: the run ends.
    Complete,
    /// More work is needed: the worker gets the next instructions.
    Continue,
    /// A human must step in.
    Escalate,
    /// The work needs quality improvements: the worker gets what to improve.
    Refine,
}

/// What kind of error the worker met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum ErrorType {
    /// In the code being written.
    Implementation,
    /// In settings or the environment's configuration.
    Configuration,
    /// In a library or tool the work depends on.
    Dependency,
    /// Between components.
    Integration,
}

/// How bad an error or a blocker is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Severity {
    /// Low (errors only).
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

/// How soon a human must act on an escalation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Urgency {
    /// When convenient.
    Low,
    /// Soon.
    Medium,
    /// Today.
    High,
    /// Now.
    Immediate,
}

/// What an escalation is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Category {
    /// A technical problem beyond the agents.
    Technical,
    /// Configuration only a human can change.
    Configuration,
    /// A design decision.
    Architectural,
    /// Missing resources (time, money, machines).
    Resource,
    /// A security concern.
    Security,
}

/// What blocks the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum BlockerType {
    /// A skill the agents lack.
    Skill,
    /// Access they do not have.
    Access,
    /// A design question.
    Design,
    /// The environment.
    Environment,
    /// Something the work depends on.
    Dependency,
}

/// The initialization's context (the seed's keys).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct InitContext {
    /// Where the project lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub project_root: Option<String>,
    /// Files the worker should read first.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub relevant_files: Vec<String>,
    /// Code patterns to follow.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub patterns: Vec<String>,
    /// Technical limits and requirements.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub constraints: Vec<String>,
}

/// A file the worker changed, and how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct FileChange {
    /// The file.
    pub path: String,
    /// What changed in it.
    pub description: String,
}

/// The worker's tests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Tests {
    /// Tests added.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default = 0))]
    pub added: u32,
    /// Tests passing.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default = 0))]
    pub passing: u32,
    /// Coverage as the worker's tool reports it (`"85%"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub coverage: Option<String>,
}

/// The worker's structured report (the seed's `worker_report`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct WorkerReport {
    /// How far it got.
    pub status: WorkerStatus,
    /// What it completed.
    #[serde(default)]
    pub accomplished: Vec<String>,
    /// The files it changed.
    #[serde(default)]
    pub files_modified: Vec<FileChange>,
    /// Its tests.
    #[serde(default)]
    pub tests: Tests,
    /// Problems it met.
    #[serde(default)]
    pub issues: Vec<String>,
    /// How it verified the work.
    #[serde(default)]
    pub validation: Vec<String>,
}

/// What the manager learnt for the next iterations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct ContextUpdates {
    /// Patterns now established.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub new_patterns: Vec<String>,
    /// Structural changes.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub architecture_changes: Vec<String>,
    /// Dependencies added.
    #[serde(default)]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub dependencies_added: Vec<String>,
}

/// The worker's account of an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct ErrorReport {
    /// What kind of error.
    pub error_type: ErrorType,
    /// How bad.
    pub severity: Severity,
    /// What went wrong, in detail.
    pub description: String,
    /// What was being attempted.
    #[serde(default)]
    pub context: String,
    /// What it tried.
    #[serde(default)]
    pub attempted_solutions: Vec<String>,
    /// The errors' own text.
    #[serde(default)]
    pub error_messages: Vec<String>,
    /// The files involved.
    #[serde(default)]
    pub affected_files: Vec<String>,
}

/// The manager's answer to an error report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct RecoveryInstructions {
    /// The approach to take.
    pub strategy: String,
    /// Its steps, in order.
    pub steps: Vec<String>,
    /// Other approaches, should it fail.
    #[serde(default)]
    pub alternatives: Vec<String>,
    /// How to know it is fixed.
    #[serde(default)]
    pub success_indicators: Vec<String>,
    /// When to give up and escalate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_trigger: Option<String>,
}

/// Why a run needs a human.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct EscalationDetails {
    /// What it is about.
    pub category: Category,
    /// How bad (medium, high or critical).
    pub severity: Severity,
    /// How soon a human must act.
    pub urgency: Urgency,
    /// What blocks the run.
    pub blocker_type: BlockerType,
    /// The issue, for a human.
    pub description: String,
    /// What it costs: delay, functionality affected, risk.
    pub impact: String,
    /// What the human should do.
    pub recommendation: String,
}

/// One iteration as an escalation recounts it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "ProtocolHistoryItem"))]
pub struct HistoryItem {
    /// The iteration.
    pub iteration: u32,
    /// What the manager asked for.
    pub manager_instructions: String,
    /// What the worker answered (its report, or its error report). An escalation's
    /// `complete_history` carries it, read back from the run's messages; a run's own history
    /// leaves it out (each report is in its message), so that the run stays small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_report: Option<Value>,
    /// How it ended: `complete`, `continue`, `refine`, `escalate`, `error`, `lost` (its
    /// message went unanswered), or `open` while it runs.
    pub outcome: String,
}

/// Where the work stands when a run is escalated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct CurrentState {
    /// Every file the worker reported changing, in the order first reported.
    pub files_modified: Vec<String>,
    /// The last report's status and what it accomplished, in words.
    pub project_status: String,
    /// Dependencies the manager recorded as added along the way, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub dependencies: Vec<String>,
    /// The run's settings as its initialization gave them (project root, constraints).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "uniffi", uniffi(default))]
    pub configuration: Vec<String>,
}

/// A protocol message's body, with the seed's field names (`handoff_type`, `worker_report`,
/// `manager_decision`, ...): which fields a message carries depends on its type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct ProtocolBody {
    /// Which message this is.
    pub handoff_type: HandoffType,
    /// When it was sent.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub timestamp: DateTime<Utc>,
    /// The task the run works on.
    pub task_id: String,
    /// The iteration it belongs to, from 1.
    pub iteration: u32,
    /// An initialization's instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// An initialization's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<InitContext>,
    /// How success is judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub success_criteria: Vec<String>,
    /// Standards the work must meet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality_gates: Vec<String>,
    /// A worker's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_report: Option<WorkerReport>,
    /// The manager's decision on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_decision: Option<Decision>,
    /// What the worker is to do next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_instructions: Option<String>,
    /// What the manager learnt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_updates: Option<ContextUpdates>,
    /// A worker's error report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_report: Option<ErrorReport>,
    /// The manager's recovery steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_instructions: Option<RecoveryInstructions>,
    /// Recoveries so far in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<u32>,
    /// Recoveries allowed before the run escalates by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Why a human is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_details: Option<EscalationDetails>,
    /// Every iteration so far (an escalation's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub complete_history: Vec<HistoryItem>,
    /// Where the work stands (an escalation's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<CurrentState>,
    /// How to go on once resolved: an escalation's suggestion, a resolution's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_instructions: Option<String>,
}

impl ProtocolBody {
    fn new(handoff_type: HandoffType, run: &Run, now: DateTime<Utc>) -> ProtocolBody {
        ProtocolBody {
            handoff_type,
            timestamp: now,
            task_id: run.task_id.clone(),
            iteration: run.iteration,
            instructions: None,
            context: None,
            success_criteria: Vec::new(),
            quality_gates: Vec::new(),
            worker_report: None,
            manager_decision: None,
            continuation_instructions: None,
            context_updates: None,
            error_report: None,
            recovery_instructions: None,
            retry_count: None,
            max_retries: None,
            escalation_details: None,
            complete_history: Vec::new(),
            current_state: None,
            resume_instructions: None,
        }
    }
}

/// Who holds a run's latest message, and so which calls are valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
#[cfg_attr(feature = "uniffi", uniffi(name = "ProtocolPhase"))]
pub enum Phase {
    /// The worker holds instructions: it reports, or reports an error.
    Working,
    /// The manager holds a report: it decides, or escalates.
    Reviewing,
    /// The manager holds an error report: it sends recovery steps, or escalates.
    Recovering,
    /// A human holds an escalation: they resolve it.
    Escalated,
    /// The manager holds a human's resolution: it decides, or escalates again.
    Resuming,
    /// The manager decided COMPLETE: nothing more happens.
    Completed,
}

/// Who a message goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Recipient {
    /// The run's manager.
    Manager,
    /// The run's worker.
    Worker,
    /// Whoever the run escalates to.
    Human,
}

/// A message the store sends as a handoff in the call's transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// Who gets it.
    pub to: Recipient,
    /// Its body (its `handoff_type` gives the handoff's kind).
    pub body: ProtocolBody,
}

/// A protocol run: the state every call reads and updates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "ProtocolRun"))]
pub struct Run {
    /// The task it works on.
    pub task_id: String,
    /// The manager.
    pub manager: String,
    /// The worker.
    pub worker: String,
    /// Who gets an escalation.
    pub escalate_to: String,
    /// What the run is for: the initialization's instructions (every message's `goal`).
    pub goal: String,
    /// How success is judged, as the initialization gave it.
    pub success_criteria: Vec<String>,
    /// The handoff whose holder makes the next call; `None` before the first message is
    /// stored and once the run is completed (the store keeps it).
    #[serde(default)]
    pub message_id: Option<String>,
    /// When the run was initialized.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub started_at: DateTime<Utc>,
    /// When the last call changed it.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: DateTime<Utc>,
    /// When the iteration under way (or its last recovery) started.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub iteration_started_at: DateTime<Utc>,
    /// How long each closed entry of `history` took, in seconds, in order.
    #[serde(default)]
    pub iteration_seconds: Vec<f64>,
    /// The iteration under way, from 1.
    pub iteration: u32,
    /// Iterations allowed before a CONTINUE or REFINE escalates instead.
    pub max_iterations: u32,
    /// Recoveries so far.
    pub retry_count: u32,
    /// Recoveries allowed before the run escalates by itself.
    pub max_retries: u32,
    /// Who holds the latest message.
    pub phase: Phase,
    /// Escalations so far.
    pub escalations: u32,
    /// Every iteration, the current one last.
    pub history: Vec<HistoryItem>,
    /// The files reported changed so far.
    pub files_modified: Vec<String>,
    /// The last report's status, in words.
    pub project_status: String,
    /// Dependencies the manager's context updates added so far.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// The initialization's settings, in words (project root, constraints).
    #[serde(default)]
    pub configuration: Vec<String>,
}

/// What a manager gives to start a run.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Initialize {
    /// The task.
    pub task_id: String,
    /// The manager.
    pub manager: String,
    /// The worker.
    pub worker: String,
    /// What the worker is to do.
    pub instructions: String,
    /// How success is judged: at least one.
    pub success_criteria: Vec<String>,
    /// The context.
    pub context: Option<InitContext>,
    /// Standards the work must meet.
    pub quality_gates: Vec<String>,
    /// Iterations allowed (default 10).
    pub max_iterations: Option<u32>,
    /// Recoveries allowed (default 3).
    pub max_retries: Option<u32>,
    /// Who gets an escalation (default `human`).
    pub escalate_to: Option<String>,
}

/// Iterations a run allows unless told otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;
/// Recoveries a run allows unless told otherwise.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// A call made while the run is not where the call needs it: the store's
/// `InvalidTransition`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot {call} while the run is {phase:?}: {needs}")]
pub struct Refusal {
    /// The refused call.
    pub call: &'static str,
    /// Where the run is.
    pub phase: Phase,
    /// What the call needs, in words.
    pub needs: &'static str,
}

/// Why a call on a run failed: out of turn (the store reports `InvalidTransition` on the
/// held message), or bad input (`Validation`, every problem at once). Either way the run is
/// unchanged.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The call does not fit where the run is.
    #[error(transparent)]
    OutOfTurn(#[from] Refusal),
    /// The input broke the checks.
    #[error(transparent)]
    Invalid(#[from] crate::Error),
}

impl ProtocolError {
    /// The problems of bad input (none for a call out of turn).
    pub fn problems(&self) -> &[Problem] {
        match self {
            ProtocolError::Invalid(err) => err.problems(),
            ProtocolError::OutOfTurn(_) => &[],
        }
    }
}

/// A call's result.
pub type Outcome<T> = std::result::Result<T, ProtocolError>;

fn text_given(c: &mut Collector, field: &str, text: &str) {
    if text.trim().is_empty() {
        c.push(field, "must not be empty");
    }
}

fn texts_given(c: &mut Collector, field: &str, texts: &[String]) {
    for (i, text) in texts.iter().enumerate() {
        text_given(c, &format!("{field}[{i}]"), text);
    }
}

/// The checks before a worker's report goes to the manager (the seed's worker → manager
/// checks): every changed file documented, issues described when the work is not complete.
pub fn check_report(report: &WorkerReport) -> Vec<Problem> {
    let mut c = Collector::default();
    for (i, file) in report.files_modified.iter().enumerate() {
        text_given(&mut c, &format!("files_modified[{i}].path"), &file.path);
        text_given(
            &mut c,
            &format!("files_modified[{i}].description"),
            &file.description,
        );
    }
    texts_given(&mut c, "accomplished", &report.accomplished);
    texts_given(&mut c, "issues", &report.issues);
    if report.status != WorkerStatus::Completed && report.issues.is_empty() {
        c.push(
            "issues",
            "must describe what is left or went wrong when the status is not COMPLETED",
        );
    }
    c.into_problems()
}

/// Every problem of an error report.
pub fn check_error_report(report: &ErrorReport) -> Vec<Problem> {
    let mut c = Collector::default();
    text_given(&mut c, "description", &report.description);
    texts_given(&mut c, "attempted_solutions", &report.attempted_solutions);
    c.into_problems()
}

/// Every problem of recovery steps (manager → worker: actionable).
pub fn check_recovery(recovery: &RecoveryInstructions) -> Vec<Problem> {
    let mut c = Collector::default();
    text_given(&mut c, "strategy", &recovery.strategy);
    if recovery.steps.is_empty() {
        c.push("steps", "must list at least one step");
    }
    texts_given(&mut c, "steps", &recovery.steps);
    c.into_problems()
}

/// Every problem of an escalation's details (a human reads them: each must say something;
/// an escalation is at least of medium severity).
pub fn check_escalation(details: &EscalationDetails) -> Vec<Problem> {
    let mut c = Collector::default();
    if details.severity < Severity::Medium {
        c.push(
            "severity",
            "must be medium, high or critical for an escalation",
        );
    }
    text_given(&mut c, "description", &details.description);
    text_given(&mut c, "impact", &details.impact);
    text_given(&mut c, "recommendation", &details.recommendation);
    c.into_problems()
}

/// Every problem of a stored message's body (a record's `protocol`, named `protocol.…`): it
/// matches the record's `kind` and `task_id`, carries what its type needs, passes the checks
/// of its direction, and keeps to `limits` (each text, each list, the nesting).
pub(crate) fn check_body(
    body: &ProtocolBody,
    kind: Kind,
    task_id: &str,
    limits: &validate::Limits,
) -> Vec<Problem> {
    let mut c = Collector::default();
    if body.handoff_type.kind() != kind {
        c.push(
            "protocol.handoff_type",
            format!("must match the record's kind ({kind})"),
        );
    }
    if body.task_id != task_id {
        c.push("protocol.task_id", "must be the record's task_id");
    }
    if body.iteration == 0 {
        c.push("protocol.iteration", "must be at least 1");
    }
    let needs = match body.handoff_type {
        HandoffType::Initialization => {
            text_given(
                &mut c,
                "protocol.instructions",
                body.instructions.as_deref().unwrap_or_default(),
            );
            if body.success_criteria.is_empty() {
                c.push(
                    "protocol.success_criteria",
                    "must define at least one criterion",
                );
            }
            None
        }
        HandoffType::Progress => (body.worker_report.is_none()
            && body.continuation_instructions.is_none()
            && body.resume_instructions.is_none())
        .then_some((
            "protocol.worker_report",
            "a progress message carries a worker_report, continuation_instructions or \
             resume_instructions",
        )),
        HandoffType::ErrorRecovery => {
            (body.error_report.is_none() && body.recovery_instructions.is_none()).then_some((
                "protocol.error_report",
                "an error_recovery message carries an error_report or recovery_instructions",
            ))
        }
        HandoffType::Escalation => body.escalation_details.is_none().then_some((
            "protocol.escalation_details",
            "an escalation must say why a human is needed",
        )),
    };
    if let Some((field, rule)) = needs {
        c.push(field, rule);
    }
    let mut problems = c.into_problems();
    let mut part = |name: &str, found: Vec<Problem>| {
        problems.extend(within(&format!("protocol.{name}"), found));
    };
    if let Some(report) = &body.worker_report {
        part("worker_report", check_report(report));
    }
    if let Some(report) = &body.error_report {
        part("error_report", check_error_report(report));
    }
    if let Some(recovery) = &body.recovery_instructions {
        part("recovery_instructions", check_recovery(recovery));
    }
    if let Some(details) = &body.escalation_details {
        part("escalation_details", check_escalation(details));
    }
    let mut sizes = Collector::default();
    check_sizes(body, limits, &mut sizes);
    problems.extend(sizes.into_problems());
    problems
}

/// Every text and list of `body` that breaks `limits`, named by its path. Walked field by
/// field: turning the body into a JSON value to walk it cost a third of a protocol call.
fn check_sizes(b: &ProtocolBody, limits: &validate::Limits, c: &mut Collector) {
    use validate::{count, list, text, text_named};
    let opt = |c: &mut Collector, field: &str, value: &Option<String>| {
        if let Some(value) = value {
            text(c, limits, field, value);
        }
    };
    opt(c, "protocol.instructions", &b.instructions);
    if let Some(context) = &b.context {
        opt(c, "protocol.context.project_root", &context.project_root);
        list(
            c,
            limits,
            "protocol.context.relevant_files",
            &context.relevant_files,
        );
        list(c, limits, "protocol.context.patterns", &context.patterns);
        list(
            c,
            limits,
            "protocol.context.constraints",
            &context.constraints,
        );
    }
    list(c, limits, "protocol.success_criteria", &b.success_criteria);
    list(c, limits, "protocol.quality_gates", &b.quality_gates);
    if let Some(r) = &b.worker_report {
        list(
            c,
            limits,
            "protocol.worker_report.accomplished",
            &r.accomplished,
        );
        let files = "protocol.worker_report.files_modified";
        count(c, limits, files, r.files_modified.len());
        for (i, file) in r.files_modified.iter().enumerate() {
            text_named(c, limits, || format!("{files}[{i}].path"), &file.path);
            text_named(
                c,
                limits,
                || format!("{files}[{i}].description"),
                &file.description,
            );
        }
        opt(
            c,
            "protocol.worker_report.tests.coverage",
            &r.tests.coverage,
        );
        list(c, limits, "protocol.worker_report.issues", &r.issues);
        list(
            c,
            limits,
            "protocol.worker_report.validation",
            &r.validation,
        );
    }
    opt(
        c,
        "protocol.continuation_instructions",
        &b.continuation_instructions,
    );
    if let Some(u) = &b.context_updates {
        list(
            c,
            limits,
            "protocol.context_updates.new_patterns",
            &u.new_patterns,
        );
        let changes = &u.architecture_changes;
        list(
            c,
            limits,
            "protocol.context_updates.architecture_changes",
            changes,
        );
        let added = &u.dependencies_added;
        list(
            c,
            limits,
            "protocol.context_updates.dependencies_added",
            added,
        );
    }
    if let Some(e) = &b.error_report {
        text(
            c,
            limits,
            "protocol.error_report.description",
            &e.description,
        );
        text(c, limits, "protocol.error_report.context", &e.context);
        let tried = &e.attempted_solutions;
        list(
            c,
            limits,
            "protocol.error_report.attempted_solutions",
            tried,
        );
        list(
            c,
            limits,
            "protocol.error_report.error_messages",
            &e.error_messages,
        );
        list(
            c,
            limits,
            "protocol.error_report.affected_files",
            &e.affected_files,
        );
    }
    if let Some(r) = &b.recovery_instructions {
        text(
            c,
            limits,
            "protocol.recovery_instructions.strategy",
            &r.strategy,
        );
        list(c, limits, "protocol.recovery_instructions.steps", &r.steps);
        list(
            c,
            limits,
            "protocol.recovery_instructions.alternatives",
            &r.alternatives,
        );
        let indicators = &r.success_indicators;
        list(
            c,
            limits,
            "protocol.recovery_instructions.success_indicators",
            indicators,
        );
        let trigger = &r.escalation_trigger;
        opt(
            c,
            "protocol.recovery_instructions.escalation_trigger",
            trigger,
        );
    }
    if let Some(d) = &b.escalation_details {
        text(
            c,
            limits,
            "protocol.escalation_details.description",
            &d.description,
        );
        text(c, limits, "protocol.escalation_details.impact", &d.impact);
        text(
            c,
            limits,
            "protocol.escalation_details.recommendation",
            &d.recommendation,
        );
    }
    let history = "protocol.complete_history";
    count(c, limits, history, b.complete_history.len());
    for (i, item) in b.complete_history.iter().enumerate() {
        let instructions = &item.manager_instructions;
        text_named(
            c,
            limits,
            || format!("{history}[{i}].manager_instructions"),
            instructions,
        );
        text_named(
            c,
            limits,
            || format!("{history}[{i}].outcome"),
            &item.outcome,
        );
        if let Some(report) = &item.worker_report {
            let field = format!("{history}[{i}].worker_report");
            validate::sizes(&field, report, limits)
                .into_iter()
                .for_each(|p| c.push(p.field, p.rule));
        }
    }
    if let Some(state) = &b.current_state {
        list(
            c,
            limits,
            "protocol.current_state.files_modified",
            &state.files_modified,
        );
        text(
            c,
            limits,
            "protocol.current_state.project_status",
            &state.project_status,
        );
    }
    opt(c, "protocol.resume_instructions", &b.resume_instructions);
}

impl Run {
    fn expect(
        &self,
        call: &'static str,
        phases: &[Phase],
        needs: &'static str,
    ) -> std::result::Result<(), Refusal> {
        if phases.contains(&self.phase) {
            Ok(())
        } else {
            Err(Refusal {
                call,
                phase: self.phase,
                needs,
            })
        }
    }

    /// Starts a run: the initialization for the worker, iteration 1. Every problem of the
    /// manager → worker checks at once (agents, instructions, success criteria, limits).
    pub fn initialize(new: Initialize, now: DateTime<Utc>) -> Result<(Run, Message)> {
        let mut c = Collector::default();
        c.ident("task_id", &new.task_id);
        for (field, agent) in [("manager", &new.manager), ("worker", &new.worker)] {
            if let Err(err) = validate::agent(field, agent) {
                err.problems()
                    .iter()
                    .for_each(|p| c.push(&p.field, &p.rule));
            }
        }
        c.opt_agent("escalate_to", new.escalate_to.as_deref());
        text_given(&mut c, "instructions", &new.instructions);
        if new.success_criteria.is_empty() {
            c.push("success_criteria", "must define at least one criterion");
        }
        texts_given(&mut c, "success_criteria", &new.success_criteria);
        texts_given(&mut c, "quality_gates", &new.quality_gates);
        if new.max_iterations == Some(0) {
            c.push("max_iterations", "must be at least 1");
        }
        c.finish()?;
        let mut run = Run {
            task_id: new.task_id,
            manager: new.manager,
            worker: new.worker,
            escalate_to: new.escalate_to.unwrap_or_else(|| "human".to_owned()),
            goal: new.instructions.clone(),
            success_criteria: new.success_criteria.clone(),
            message_id: None,
            started_at: now,
            updated_at: now,
            iteration_started_at: now,
            iteration_seconds: Vec::new(),
            iteration: 1,
            max_iterations: new.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
            retry_count: 0,
            max_retries: new.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            phase: Phase::Working,
            escalations: 0,
            history: Vec::new(),
            files_modified: Vec::new(),
            project_status: "initialized".to_owned(),
            dependencies: Vec::new(),
            configuration: new
                .context
                .as_ref()
                .map(|c| {
                    c.project_root
                        .iter()
                        .map(|root| format!("project root: {root}"))
                        .chain(c.constraints.iter().map(|x| format!("constraint: {x}")))
                        .collect()
                })
                .unwrap_or_default(),
        };
        run.open_iteration(&new.instructions, now);
        let mut body = ProtocolBody::new(HandoffType::Initialization, &run, now);
        body.instructions = Some(new.instructions);
        body.context = new.context;
        body.success_criteria = new.success_criteria;
        body.quality_gates = new.quality_gates;
        Ok((
            run,
            Message {
                to: Recipient::Worker,
                body,
            },
        ))
    }

    fn open_iteration(&mut self, instructions: &str, now: DateTime<Utc>) {
        self.iteration_started_at = now;
        self.history.push(HistoryItem {
            iteration: self.iteration,
            manager_instructions: instructions.to_owned(),
            worker_report: None,
            outcome: "open".to_owned(),
        });
    }

    fn close_iteration(&mut self, outcome: &str, now: DateTime<Utc>) {
        if let Some(last) = self.history.last_mut()
            && last.outcome == "open"
        {
            last.outcome = outcome.to_owned();
            let took = (now - self.iteration_started_at).num_milliseconds().max(0);
            // Milliseconds as seconds: exact enough for any iteration a person waits for.
            let seconds = took as f64 / 1000.0;
            self.iteration_seconds.push(seconds);
        }
    }

    /// The worker's report: a progress message for the manager.
    pub fn report(&mut self, report: WorkerReport, now: DateTime<Utc>) -> Outcome<Message> {
        self.expect(
            "report",
            &[Phase::Working],
            "the worker must hold instructions",
        )?;
        invalid(check_report(&report))?;
        for file in &report.files_modified {
            if !self.files_modified.contains(&file.path) {
                self.files_modified.push(file.path.clone());
            }
        }
        self.project_status = format!(
            "{}: {}",
            wire_name(&report.status),
            if report.accomplished.is_empty() {
                "nothing reported accomplished".to_owned()
            } else {
                report.accomplished.join("; ")
            }
        );
        self.phase = Phase::Reviewing;
        let mut body = ProtocolBody::new(HandoffType::Progress, self, now);
        body.worker_report = Some(report);
        Ok(Message {
            to: Recipient::Manager,
            body,
        })
    }

    /// The manager's decision on a report (or on a human's resolution). COMPLETE ends the run
    /// (no message); CONTINUE and REFINE send `instructions` to the worker for the next
    /// iteration, or escalate when the run has had `max_iterations`; ESCALATE is
    /// [`Run::escalate`] with `details`.
    pub fn decide(
        &mut self,
        decision: Decision,
        instructions: Option<String>,
        context_updates: Option<ContextUpdates>,
        details: Option<EscalationDetails>,
        now: DateTime<Utc>,
    ) -> Outcome<Option<Message>> {
        self.expect(
            "decide",
            &[Phase::Reviewing, Phase::Resuming],
            "the manager must hold a report or a resolution",
        )?;
        match decision {
            Decision::Complete => {
                self.close_iteration("complete", now);
                self.phase = Phase::Completed;
                Ok(None)
            }
            Decision::Continue | Decision::Refine => {
                let mut c = Collector::default();
                text_given(
                    &mut c,
                    "instructions",
                    instructions.as_deref().unwrap_or_default(),
                );
                c.finish()?;
                let outcome = if decision == Decision::Continue {
                    "continue"
                } else {
                    "refine"
                };
                if let Some(details) = &details {
                    invalid(within("escalation_details", check_escalation(details)))?;
                }
                if self.iteration >= self.max_iterations {
                    self.close_iteration(outcome, now);
                    let details = details.unwrap_or_else(|| self.limit_details("max_iterations"));
                    return Ok(Some(self.escalate_now(details, now)));
                }
                self.close_iteration(outcome, now);
                self.iteration += 1;
                let instructions = instructions.unwrap_or_default();
                self.open_iteration(&instructions, now);
                self.phase = Phase::Working;
                if let Some(updates) = &context_updates {
                    for added in &updates.dependencies_added {
                        if !self.dependencies.contains(added) {
                            self.dependencies.push(added.clone());
                        }
                    }
                }
                let mut body = ProtocolBody::new(HandoffType::Progress, self, now);
                body.manager_decision = Some(decision);
                body.continuation_instructions = Some(instructions);
                body.context_updates = context_updates;
                Ok(Some(Message {
                    to: Recipient::Worker,
                    body,
                }))
            }
            Decision::Escalate => {
                let Some(details) = details else {
                    return Err(crate::Error::invalid(
                        "escalation_details",
                        "must say why a human is needed when the decision is ESCALATE",
                    )
                    .into());
                };
                invalid(within("escalation_details", check_escalation(&details)))?;
                self.escalate(details, now).map(Some)
            }
        }
    }

    /// The worker's error report: an error-recovery message for the manager.
    pub fn report_error(&mut self, report: ErrorReport, now: DateTime<Utc>) -> Outcome<Message> {
        self.expect(
            "report_error",
            &[Phase::Working],
            "the worker must hold instructions",
        )?;
        invalid(check_error_report(&report))?;
        self.close_iteration("error", now);
        self.phase = Phase::Recovering;
        let mut body = ProtocolBody::new(HandoffType::ErrorRecovery, self, now);
        body.error_report = Some(report);
        body.retry_count = Some(self.retry_count);
        body.max_retries = Some(self.max_retries);
        Ok(Message {
            to: Recipient::Manager,
            body,
        })
    }

    /// The manager's recovery steps for the worker, one retry more; past `max_retries` the
    /// run escalates instead.
    pub fn recover(
        &mut self,
        recovery: RecoveryInstructions,
        now: DateTime<Utc>,
    ) -> Outcome<Message> {
        self.expect(
            "recover",
            &[Phase::Recovering],
            "the manager must hold an error report",
        )?;
        invalid(check_recovery(&recovery))?;
        if self.retry_count >= self.max_retries {
            let details = self.limit_details("max_retries");
            return Ok(self.escalate_now(details, now));
        }
        self.retry_count += 1;
        self.open_iteration(&recovery.strategy, now);
        self.phase = Phase::Working;
        let mut body = ProtocolBody::new(HandoffType::ErrorRecovery, self, now);
        body.recovery_instructions = Some(recovery);
        body.retry_count = Some(self.retry_count);
        body.max_retries = Some(self.max_retries);
        Ok(Message {
            to: Recipient::Worker,
            body,
        })
    }

    /// The manager hands the run to a human, with the whole history and where the work
    /// stands.
    pub fn escalate(&mut self, details: EscalationDetails, now: DateTime<Utc>) -> Outcome<Message> {
        self.expect(
            "escalate",
            &[Phase::Reviewing, Phase::Recovering, Phase::Resuming],
            "the manager must hold a report, an error report or a resolution",
        )?;
        invalid(check_escalation(&details))?;
        self.close_iteration("escalate", now);
        Ok(self.escalate_now(details, now))
    }

    fn escalate_now(&mut self, details: EscalationDetails, now: DateTime<Utc>) -> Message {
        self.escalations += 1;
        self.phase = Phase::Escalated;
        let mut body = ProtocolBody::new(HandoffType::Escalation, self, now);
        body.escalation_details = Some(details);
        body.complete_history = self.history.clone();
        body.current_state = Some(CurrentState {
            files_modified: self.files_modified.clone(),
            project_status: self.project_status.clone(),
            dependencies: self.dependencies.clone(),
            configuration: self.configuration.clone(),
        });
        body.resume_instructions = Some(
            "Resolve with what to do next; the manager then decides how the worker goes on."
                .to_owned(),
        );
        body.retry_count = Some(self.retry_count);
        body.max_retries = Some(self.max_retries);
        Message {
            to: Recipient::Human,
            body,
        }
    }

    /// The run's current message ended unanswered (`what` says how: its claims lapsed on
    /// every attempt, its addressee rejected it, it was cancelled): the run escalates to a
    /// human, who resolves it like any escalation. Nothing happens to a completed run, nor to
    /// one a human already holds (its escalation is what was lost: the human must look).
    pub fn message_lost(&mut self, what: &str, now: DateTime<Utc>) -> Option<Message> {
        if matches!(self.phase, Phase::Completed | Phase::Escalated) {
            return None;
        }
        self.close_iteration("lost", now);
        let details = EscalationDetails {
            category: Category::Technical,
            severity: Severity::High,
            urgency: Urgency::High,
            blocker_type: BlockerType::Environment,
            description: format!("The run's latest message {what}, so nobody will answer it."),
            impact: "The run is stopped until someone decides how it goes on.".to_owned(),
            recommendation: "Check the agent that should have answered, then resolve with how \
                             to go on."
                .to_owned(),
        };
        Some(self.escalate_now(details, now))
    }

    /// The escalation a limit forces.
    fn limit_details(&self, limit: &str) -> EscalationDetails {
        EscalationDetails {
            category: Category::Technical,
            severity: Severity::High,
            urgency: Urgency::High,
            blocker_type: BlockerType::Skill,
            description: format!(
                "The run reached its {limit} ({} iterations, {} recoveries) without completing.",
                self.iteration, self.retry_count
            ),
            impact: "The task is not done and the agents have stopped working on it.".to_owned(),
            recommendation: "Read the history, then resolve with how to go on.".to_owned(),
        }
    }

    /// A human's answer to an escalation: a progress message for the manager carrying it as
    /// `resume_instructions`. The iteration and retry limits start afresh.
    pub fn resolve(&mut self, resolution: &str, now: DateTime<Utc>) -> Outcome<Message> {
        self.expect(
            "resolve",
            &[Phase::Escalated],
            "a human must hold an escalation",
        )?;
        let mut c = Collector::default();
        text_given(&mut c, "resolution", resolution);
        c.finish()?;
        self.max_iterations = self.iteration.saturating_add(self.max_iterations.max(1));
        self.max_retries = self.retry_count.saturating_add(self.max_retries);
        self.phase = Phase::Resuming;
        let mut body = ProtocolBody::new(HandoffType::Progress, self, now);
        body.resume_instructions = Some(resolution.to_owned());
        Ok(Message {
            to: Recipient::Manager,
            body,
        })
    }
}

/// One run as [`ProtocolStats`] counts it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "ProtocolRunSummary"))]
pub struct RunSummary {
    /// The run's task.
    pub task_id: String,
    /// Who holds its latest message.
    pub phase: Phase,
    /// Iterations so far.
    pub iterations: u32,
    /// Recoveries so far.
    pub retries: u32,
    /// Escalations so far.
    pub escalations: u32,
    /// When it started.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub started_at: DateTime<Utc>,
    /// When it last changed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: DateTime<Utc>,
}

/// How the store's protocol runs went: per run and over all of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct ProtocolStats {
    /// Runs started.
    pub runs: u64,
    /// Runs the manager completed.
    pub completed: u64,
    /// Completed runs that needed one iteration, no recovery and no human.
    pub first_try_completions: u64,
    /// `first_try_completions / completed` (0 when none completed).
    pub first_try_completion_rate: f64,
    /// Runs escalated to a human at least once.
    pub escalated: u64,
    /// `escalated / runs` (0 when there are none).
    pub escalation_rate: f64,
    /// Recoveries over every run.
    pub retries: u64,
    /// Iterations per run, on average.
    pub mean_iterations: f64,
    /// The median time an iteration (or a recovery) took, from its instructions to the
    /// manager's answer, in seconds; `None` before any closed.
    pub median_iteration_seconds: Option<f64>,
    /// Every run, oldest first.
    pub per_run: Vec<RunSummary>,
}

impl ProtocolStats {
    /// Counts `runs`.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a Run>) -> ProtocolStats {
        let mut stats = ProtocolStats::default();
        let mut seconds = Vec::new();
        let mut iterations = 0u64;
        for run in runs {
            stats.runs += 1;
            let completed = run.phase == Phase::Completed;
            stats.completed += u64::from(completed);
            stats.first_try_completions += u64::from(
                completed && run.iteration == 1 && run.retry_count == 0 && run.escalations == 0,
            );
            stats.escalated += u64::from(run.escalations > 0);
            stats.retries += u64::from(run.retry_count);
            iterations += u64::from(run.iteration);
            seconds.extend_from_slice(&run.iteration_seconds);
            stats.per_run.push(RunSummary {
                task_id: run.task_id.clone(),
                phase: run.phase,
                iterations: run.iteration,
                retries: run.retry_count,
                escalations: run.escalations,
                started_at: run.started_at,
                updated_at: run.updated_at,
            });
        }
        stats.per_run.sort_by_key(|r| r.started_at);
        stats.first_try_completion_rate = ratio(stats.first_try_completions, stats.completed);
        stats.escalation_rate = ratio(stats.escalated, stats.runs);
        stats.mean_iterations = ratio(iterations, stats.runs);
        seconds.sort_by(f64::total_cmp);
        stats.median_iteration_seconds = match seconds.len() {
            0 => None,
            n if n % 2 == 1 => Some(seconds[n / 2]),
            n => Some((seconds[n / 2 - 1] + seconds[n / 2]) / 2.0),
        };
        stats
    }
}

/// `part / whole`, 0 for an empty whole.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// An enum's wire name, as the JSON form spells it (`PARTIAL`, `error_recovery`).
pub(crate) fn wire_name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

/// `problems` of a part given whole, named under it (`escalation_details.severity`).
fn within(part: &str, problems: Vec<Problem>) -> Vec<Problem> {
    problems
        .into_iter()
        .map(|p| Problem::new(format!("{part}.{}", p.field), p.rule))
        .collect()
}

fn invalid(problems: Vec<Problem>) -> Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(crate::Error::Validation { problems })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 1, 1, 12, minute, 0).unwrap()
    }

    fn start() -> (Run, Message) {
        Run::initialize(
            Initialize {
                task_id: "task_12345".into(),
                manager: "manager".into(),
                worker: "worker".into(),
                instructions: "Add token refresh to src/auth.js".into(),
                success_criteria: vec!["refresh retried with backoff".into()],
                max_iterations: Some(3),
                max_retries: Some(1),
                ..Initialize::default()
            },
            at(0),
        )
        .unwrap()
    }

    fn partial() -> WorkerReport {
        WorkerReport {
            status: WorkerStatus::Partial,
            accomplished: vec!["refresh call".into()],
            files_modified: vec![FileChange {
                path: "src/auth.js".into(),
                description: "refresh on 401".into(),
            }],
            tests: Tests {
                added: 5,
                passing: 5,
                coverage: Some("85%".into()),
            },
            issues: vec!["no backoff yet".into()],
            validation: vec!["npm test".into()],
        }
    }

    fn details() -> EscalationDetails {
        EscalationDetails {
            category: Category::Configuration,
            severity: Severity::High,
            urgency: Urgency::Medium,
            blocker_type: BlockerType::Access,
            description: "The OAuth sandbox rejects the client id".into(),
            impact: "Refresh cannot be tested".into(),
            recommendation: "Register the client id in the sandbox".into(),
        }
    }

    #[test]
    fn bodies_use_the_seeds_names() {
        let (mut run, init) = start();
        assert_eq!(init.to, Recipient::Worker);
        let value = serde_json::to_value(&init.body).unwrap();
        assert_eq!(value["handoff_type"], "initialization");
        assert_eq!(value["iteration"], 1);
        assert_eq!(
            value["success_criteria"],
            json!(["refresh retried with backoff"])
        );
        let progress = run.report(partial(), at(1)).unwrap();
        let value = serde_json::to_value(&progress.body).unwrap();
        assert_eq!(value["worker_report"]["status"], "PARTIAL");
        assert_eq!(value["worker_report"]["tests"]["coverage"], "85%");
        assert_eq!(
            value["worker_report"]["files_modified"][0],
            json!({"path": "src/auth.js", "description": "refresh on 401"})
        );
        let back: ProtocolBody = serde_json::from_value(value).unwrap();
        assert_eq!(back, progress.body);
    }

    #[test]
    fn refine_then_an_error_a_recovery_an_escalation_and_its_resolution() {
        let (mut run, _) = start();
        run.report(partial(), at(1)).unwrap();
        let refine = run
            .decide(
                Decision::Refine,
                Some("Add backoff".into()),
                None,
                None,
                at(2),
            )
            .unwrap()
            .unwrap();
        assert_eq!((refine.to, refine.body.iteration), (Recipient::Worker, 2));
        assert_eq!(refine.body.manager_decision, Some(Decision::Refine));

        let error = ErrorReport {
            error_type: ErrorType::Dependency,
            severity: Severity::Medium,
            description: "backoff library missing".into(),
            context: "adding backoff".into(),
            attempted_solutions: vec!["npm install".into()],
            error_messages: vec!["ENOTFOUND".into()],
            affected_files: vec!["package.json".into()],
        };
        let reported = run.report_error(error.clone(), at(3)).unwrap();
        assert_eq!(reported.to, Recipient::Manager);
        assert_eq!(reported.body.handoff_type, HandoffType::ErrorRecovery);
        let steps = RecoveryInstructions {
            strategy: "vendor the backoff helper".into(),
            steps: vec!["write src/backoff.js".into()],
            alternatives: vec![],
            success_indicators: vec!["tests pass".into()],
            escalation_trigger: None,
        };
        let recovery = run.recover(steps.clone(), at(4)).unwrap();
        assert_eq!(
            (recovery.to, recovery.body.retry_count),
            (Recipient::Worker, Some(1))
        );

        // Past max_retries (1), a recovery escalates by itself.
        run.report_error(error, at(5)).unwrap();
        let forced = run.recover(steps, at(6)).unwrap();
        assert_eq!(forced.to, Recipient::Human);
        assert_eq!(forced.body.handoff_type, HandoffType::Escalation);
        let outcomes: Vec<&str> = forced
            .body
            .complete_history
            .iter()
            .map(|h| h.outcome.as_str())
            .collect();
        assert_eq!(outcomes, ["refine", "error", "error"]);
        assert_eq!(
            forced.body.current_state.unwrap().files_modified,
            ["src/auth.js"]
        );

        let resolved = run
            .resolve("backoff is allowed as a dependency", at(7))
            .unwrap();
        assert_eq!(resolved.to, Recipient::Manager);
        assert_eq!(
            resolved.body.resume_instructions.as_deref(),
            Some("backoff is allowed as a dependency")
        );
        let go_on = run
            .decide(
                Decision::Continue,
                Some("Install backoff".into()),
                None,
                None,
                at(8),
            )
            .unwrap()
            .unwrap();
        assert_eq!(go_on.to, Recipient::Worker);
        let done = WorkerReport {
            status: WorkerStatus::Completed,
            issues: vec![],
            ..partial()
        };
        run.report(done, at(9)).unwrap();
        assert!(
            run.decide(Decision::Complete, None, None, None, at(10))
                .unwrap()
                .is_none()
        );
        assert_eq!(run.phase, Phase::Completed);
    }

    #[test]
    fn a_call_out_of_turn_is_refused_and_changes_nothing() {
        let (mut run, _) = start();
        let before = run.clone();
        let err = run
            .decide(Decision::Complete, None, None, None, at(1))
            .unwrap_err();
        assert!(err.to_string().contains("cannot decide"), "{err}");
        assert!(matches!(err, ProtocolError::OutOfTurn(_)));
        assert!(run.resolve("go", at(1)).is_err());
        assert!(run.escalate(details(), at(1)).is_err());
        assert_eq!(run, before);
        run.report(partial(), at(1)).unwrap();
        assert!(
            run.report(partial(), at(2)).is_err(),
            "the manager holds it now"
        );
    }

    #[test]
    fn pre_handoff_checks_report_every_problem_at_once() {
        let err = Run::initialize(
            Initialize {
                task_id: "bad id!".into(),
                manager: "".into(),
                worker: "worker".into(),
                instructions: "  ".into(),
                max_iterations: Some(0),
                ..Initialize::default()
            },
            at(0),
        )
        .unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "task_id",
                "manager",
                "instructions",
                "success_criteria",
                "max_iterations"
            ]
        );

        let (mut run, _) = start();
        let sloppy = WorkerReport {
            status: WorkerStatus::Failed,
            files_modified: vec![FileChange {
                path: "src/auth.js".into(),
                description: "".into(),
            }],
            issues: vec![],
            ..partial()
        };
        let before = run.clone();
        let err = run.report(sloppy, at(1)).unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["files_modified[0].description", "issues"]);
        assert_eq!(run, before);
        run.report(partial(), at(1)).unwrap();
        let err = run
            .decide(Decision::Refine, Some(" ".into()), None, None, at(2))
            .unwrap_err();
        assert_eq!(err.problems()[0].field, "instructions");
        let low = EscalationDetails {
            severity: Severity::Low,
            impact: "".into(),
            ..details()
        };
        let fields: Vec<String> = check_escalation(&low)
            .into_iter()
            .map(|p| p.field)
            .collect();
        assert_eq!(fields, ["severity", "impact"]);
    }

    #[test]
    fn iterations_past_the_limit_escalate() {
        let (mut run, _) = start();
        for minute in 0..2 {
            run.report(partial(), at(minute * 2 + 1)).unwrap();
            let next = run
                .decide(
                    Decision::Continue,
                    Some("more".into()),
                    None,
                    None,
                    at(minute * 2 + 2),
                )
                .unwrap()
                .unwrap();
            assert_eq!(next.to, Recipient::Worker);
        }
        run.report(partial(), at(5)).unwrap();
        let third = run
            .decide(Decision::Continue, Some("more".into()), None, None, at(6))
            .unwrap()
            .unwrap();
        assert_eq!(third.to, Recipient::Human, "max_iterations is 3");
        assert_eq!(third.body.complete_history.len(), 3);
        assert!(
            third
                .body
                .escalation_details
                .unwrap()
                .description
                .contains("max_iterations")
        );
    }

    #[test]
    fn bad_enum_values_are_refused_by_name() {
        let bad = json!({"status": "DONE", "files_modified": []});
        let err = serde_json::from_value::<WorkerReport>(bad).unwrap_err();
        assert!(err.to_string().contains("DONE"), "{err}");
        let bad = json!({"category": "cosmic", "severity": "high", "urgency": "now",
                         "blocker_type": "skill", "description": "d", "impact": "i",
                         "recommendation": "r"});
        assert!(serde_json::from_value::<EscalationDetails>(bad).is_err());
    }

    /// A record carrying `message`'s body, as the store would make it.
    fn carrying(message: &Message) -> crate::Handoff {
        let mut new = crate::NewHandoff::new("task_12345", "Add token refresh")
            .kind(message.body.handoff_type.kind());
        new.protocol = Some(Box::new(message.body.clone()));
        new.into_record("h1".into(), at(0))
    }

    #[test]
    fn a_record_checks_its_body_against_its_kind_task_and_limits() {
        let (mut run, init) = start();
        let limits = crate::Limits::default();
        assert!(carrying(&init).validate(&limits).is_ok());
        let mut progress = run.report(partial(), at(1)).unwrap();
        progress.body.task_id = "other".into();
        progress.body.worker_report.as_mut().unwrap().accomplished[0] =
            "x".repeat(limits.max_field_bytes + 1);
        let mut record = carrying(&progress);
        record.kind = Kind::Escalation;
        let err = record.validate(&limits).unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "protocol.handoff_type",
                "protocol.task_id",
                "protocol.worker_report.accomplished[0]"
            ]
        );
        // What each type must carry, and its direction's checks.
        let mut empty = init.clone();
        empty.body.handoff_type = HandoffType::Escalation;
        let err = carrying(&empty).validate(&limits).unwrap_err();
        assert_eq!(err.problems()[0].field, "protocol.escalation_details");
        let mut vague = run
            .decide(Decision::Refine, Some("backoff".into()), None, None, at(2))
            .unwrap()
            .unwrap();
        vague.body.worker_report = Some(WorkerReport {
            issues: Vec::new(),
            ..partial()
        });
        let err = carrying(&vague).validate(&limits).unwrap_err();
        assert_eq!(err.problems()[0].field, "protocol.worker_report.issues");
    }

    #[test]
    fn a_body_is_redacted_and_rendered_as_sections() {
        let (mut run, _) = start();
        let mut report = partial();
        report.issues = vec!["the key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 leaked".into()];
        let progress = run.report(report, at(1)).unwrap();
        let record = carrying(&progress);
        let md = record.to_markdown();
        assert!(md.contains("## Protocol: progress · iteration 1"), "{md}");
        assert!(md.contains("## Worker Report: PARTIAL"), "{md}");
        assert!(md.contains("- `src/auth.js`: refresh on 401"), "{md}");
        assert!(md.contains("5 added, 5 passing, coverage 85%"), "{md}");
        assert!(!md.contains("sk-proj-abcdef"), "{md}");
        let redacted = record.redacted();
        let issues = &redacted.protocol.unwrap().worker_report.unwrap().issues;
        assert!(!issues[0].contains("sk-proj-abcdef"), "{issues:?}");
        assert!(
            record.to_json().contains("sk-proj-abcdef"),
            "stored as written"
        );
    }

    #[test]
    fn details_given_with_a_decision_are_named_under_it() {
        let (mut run, _) = start();
        run.report(partial(), at(1)).unwrap();
        let low = EscalationDetails {
            severity: Severity::Low,
            ..details()
        };
        let err = run
            .decide(Decision::Escalate, None, None, Some(low), at(2))
            .unwrap_err();
        assert_eq!(err.problems()[0].field, "escalation_details.severity");
        assert_eq!(run.phase, Phase::Reviewing);
    }
}
