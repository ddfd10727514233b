//! The manager/worker protocol (DESIGN §8) as the foreign languages see it: the typed body a
//! protocol message carries (`Handoff.protocol`, with the seed's field names), the enums and
//! records its calls take, and a run with its statistics.
//!
//! The body is typed, not JSON text as `metadata` is: its shape is fixed, and its enums are the
//! ones a caller passes to `report` and `decide`, so a manager reads `workerReport.status` as a
//! `WorkerStatus`. The one free-form part, what a worker reported in an iteration of an
//! escalation's `complete_history` (its report or its error report), is JSON text.
//!
//! A run's types carry `Protocol` in their names (`ProtocolRun`, `ProtocolPhase`,
//! `ProtocolStats`, `ProtocolRunSummary`, `ProtocolHistoryItem`): beside tasks, steps and their
//! history in one flat namespace, a bare `Run`, `Phase` or `HistoryItem` would not say whose.

use std::time::SystemTime;

use handoff_core::protocol;
use serde_json::Value;

use crate::arguments::{text, wire_form};
use crate::error::{HandoffError, Result};
use crate::record::{same_enum, time, utc};

/// Which of the protocol's four messages a body is (the seed's `handoff_type`); it matches the
/// record's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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

/// How far the worker got (the seed's `worker_report.status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum WorkerStatus {
    /// Everything asked for is done.
    Completed,
    /// Some of it is done.
    Partial,
    /// None of it could be done.
    Failed,
}

/// The manager's decision on a report (the seed's `manager_decision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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

/// How bad an error or a blocker is (an escalation is at least `Medium`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
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

/// Who holds a run's latest message, and so which calls are valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum ProtocolPhase {
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
    /// The manager decided `Complete`: nothing more happens.
    Completed,
}

/// The initialization's context (the seed's keys).
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct InitContext {
    /// Where the project lives.
    #[uniffi(default)]
    pub project_root: Option<String>,
    /// Files the worker should read first.
    #[uniffi(default)]
    pub relevant_files: Vec<String>,
    /// Code patterns to follow.
    #[uniffi(default)]
    pub patterns: Vec<String>,
    /// Technical limits and requirements.
    #[uniffi(default)]
    pub constraints: Vec<String>,
}

/// A file the worker changed, and how: both must be given (an empty `description` is
/// `Validation` on `files_modified[i].description`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct FileChange {
    /// The file.
    pub path: String,
    /// What changed in it.
    pub description: String,
}

/// The worker's tests.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct Tests {
    /// Tests added.
    #[uniffi(default = 0)]
    pub added: u32,
    /// Tests passing.
    #[uniffi(default = 0)]
    pub passing: u32,
    /// Coverage as the worker's tool reports it (`"85%"`).
    #[uniffi(default)]
    pub coverage: Option<String>,
}

/// What the manager learnt for the next iterations.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct ContextUpdates {
    /// Patterns now established.
    #[uniffi(default)]
    pub new_patterns: Vec<String>,
    /// Structural changes.
    #[uniffi(default)]
    pub architecture_changes: Vec<String>,
    /// Dependencies added.
    #[uniffi(default)]
    pub dependencies_added: Vec<String>,
}

/// Why a run needs a human: what `decide(Escalate)` takes, and what an escalation carries.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
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

/// The worker's structured report (the seed's `worker_report`), as `report` sent it.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct WorkerReport {
    /// How far it got.
    pub status: WorkerStatus,
    /// What it completed.
    pub accomplished: Vec<String>,
    /// The files it changed.
    pub files_modified: Vec<FileChange>,
    /// Its tests.
    pub tests: Tests,
    /// Problems it met.
    pub issues: Vec<String>,
    /// How it verified the work.
    pub validation: Vec<String>,
}

/// The worker's account of an error, as `report_error` sent it.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ErrorReport {
    /// What kind of error.
    pub error_type: ErrorType,
    /// How bad.
    pub severity: Severity,
    /// What went wrong, in detail.
    pub description: String,
    /// What was being attempted.
    pub context: String,
    /// What it tried.
    pub attempted_solutions: Vec<String>,
    /// The errors' own text.
    pub error_messages: Vec<String>,
    /// The files involved.
    pub affected_files: Vec<String>,
}

/// The manager's answer to an error report, as `recover` sent it.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct RecoveryInstructions {
    /// The approach to take.
    pub strategy: String,
    /// Its steps, in order.
    pub steps: Vec<String>,
    /// Other approaches, should it fail.
    pub alternatives: Vec<String>,
    /// How to know it is fixed.
    pub success_indicators: Vec<String>,
    /// When to give up and escalate.
    pub escalation_trigger: Option<String>,
}

/// One iteration (or recovery) of a run, as an escalation's `complete_history` and
/// `ProtocolRun.history` recount it.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ProtocolHistoryItem {
    /// The iteration.
    pub iteration: u32,
    /// What the manager asked for (an iteration's instructions, a recovery's strategy).
    pub manager_instructions: String,
    /// What the worker answered, if it did: its report or its error report in the seed's
    /// form (`{"status": "PARTIAL", …}`, `{"error_type": …}`), a JSON object as text.
    pub worker_report: Option<String>,
    /// How it ended: `complete`, `continue`, `refine`, `escalate`, `error`, `recover`, or
    /// `open` while it runs.
    pub outcome: String,
}

/// Where the work stands when a run is escalated.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct CurrentState {
    /// Every file the worker reported changing, in the order first reported.
    pub files_modified: Vec<String>,
    /// The last report's status and what it accomplished, in words.
    pub project_status: String,
    /// Dependencies the manager recorded as added along the way, in order.
    #[uniffi(default)]
    pub dependencies: Vec<String>,
    /// The run's settings as its initialization gave them (project root, constraints).
    #[uniffi(default)]
    pub configuration: Vec<String>,
}

/// A protocol message's body (`Handoff.protocol`), with the seed's field names: which fields
/// a message carries depends on its `handoff_type`. Only the protocol's calls write it; the
/// store checks it against the record's kind and task.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ProtocolBody {
    /// Which message this is.
    pub handoff_type: HandoffType,
    /// When it was sent.
    pub timestamp: SystemTime,
    /// The task the run works on.
    pub task_id: String,
    /// The iteration it belongs to, from 1.
    pub iteration: u32,
    /// An initialization's instructions.
    pub instructions: Option<String>,
    /// An initialization's context.
    pub context: Option<InitContext>,
    /// How success is judged (an initialization's).
    pub success_criteria: Vec<String>,
    /// Standards the work must meet (an initialization's).
    pub quality_gates: Vec<String>,
    /// A worker's report.
    pub worker_report: Option<WorkerReport>,
    /// The manager's decision on it.
    pub manager_decision: Option<Decision>,
    /// What the worker is to do next.
    pub continuation_instructions: Option<String>,
    /// What the manager learnt.
    pub context_updates: Option<ContextUpdates>,
    /// A worker's error report.
    pub error_report: Option<ErrorReport>,
    /// The manager's recovery steps.
    pub recovery_instructions: Option<RecoveryInstructions>,
    /// Recoveries so far in this run.
    pub retry_count: Option<u32>,
    /// Recoveries allowed before the run escalates by itself.
    pub max_retries: Option<u32>,
    /// Why a human is needed (an escalation's).
    pub escalation_details: Option<EscalationDetails>,
    /// Every iteration so far (an escalation's).
    pub complete_history: Vec<ProtocolHistoryItem>,
    /// Where the work stands (an escalation's).
    pub current_state: Option<CurrentState>,
    /// How to go on once resolved: an escalation's suggestion, a resolution's answer.
    pub resume_instructions: Option<String>,
}

/// A task's protocol run as it stands (`Store.protocol_run`).
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct ProtocolRun {
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
    /// The handoff whose holder makes the next call; none once the run is completed.
    pub message_id: Option<String>,
    /// When the run was initialized.
    pub started_at: SystemTime,
    /// When the last call changed it.
    pub updated_at: SystemTime,
    /// When the iteration under way (or its last recovery) started.
    pub iteration_started_at: SystemTime,
    /// How long each closed entry of `history` took, in seconds, in order.
    pub iteration_seconds: Vec<f64>,
    /// The iteration under way, from 1.
    pub iteration: u32,
    /// Iterations allowed before a `Continue` or `Refine` escalates instead.
    pub max_iterations: u32,
    /// Recoveries so far.
    pub retry_count: u32,
    /// Recoveries allowed before the run escalates by itself.
    pub max_retries: u32,
    /// Who holds the latest message.
    pub phase: ProtocolPhase,
    /// Escalations so far.
    pub escalations: u32,
    /// Every iteration, the current one last.
    pub history: Vec<ProtocolHistoryItem>,
    /// The files reported changed so far.
    pub files_modified: Vec<String>,
    /// The last report's status, in words.
    pub project_status: String,
    /// Dependencies the manager's context updates added so far.
    pub dependencies: Vec<String>,
    /// The initialization's settings, in words (project root, constraints).
    pub configuration: Vec<String>,
}

/// One run as `ProtocolStats` counts it.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ProtocolRunSummary {
    /// The run's task.
    pub task_id: String,
    /// Who holds its latest message.
    pub phase: ProtocolPhase,
    /// Iterations so far.
    pub iterations: u32,
    /// Recoveries so far.
    pub retries: u32,
    /// Escalations so far.
    pub escalations: u32,
    /// When it started.
    pub started_at: SystemTime,
    /// When it last changed.
    pub updated_at: SystemTime,
}

/// How the store's protocol runs went (`Store.protocol_stats`): per run and over all of them.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
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
    /// manager's answer, in seconds; none before any closed.
    pub median_iteration_seconds: Option<f64>,
    /// Every run, oldest first.
    pub per_run: Vec<ProtocolRunSummary>,
}

same_enum!(HandoffType <=> protocol::HandoffType {
    Initialization, Progress, ErrorRecovery, Escalation,
});
same_enum!(WorkerStatus <=> protocol::WorkerStatus { Completed, Partial, Failed });
same_enum!(Decision <=> protocol::Decision { Complete, Continue, Escalate, Refine });
same_enum!(ErrorType <=> protocol::ErrorType {
    Implementation, Configuration, Dependency, Integration,
});
same_enum!(Severity <=> protocol::Severity { Low, Medium, High, Critical });
same_enum!(Urgency <=> protocol::Urgency { Low, Medium, High, Immediate });
same_enum!(Category <=> protocol::Category {
    Technical, Configuration, Architectural, Resource, Security,
});
same_enum!(BlockerType <=> protocol::BlockerType {
    Skill, Access, Design, Environment, Dependency,
});
same_enum!(ProtocolPhase <=> protocol::Phase {
    Working, Reviewing, Recovering, Escalated, Resuming, Completed,
});

// What the protocol's methods pass to the core, in its wire form.
wire_form!(WorkerStatus => protocol::WorkerStatus);
wire_form!(Decision => protocol::Decision);
wire_form!(ErrorType => protocol::ErrorType);
wire_form!(Severity => protocol::Severity);
wire_form!(Urgency => protocol::Urgency);
wire_form!(Category => protocol::Category);
wire_form!(BlockerType => protocol::BlockerType);
wire_form!(InitContext => protocol::InitContext);
wire_form!(FileChange => protocol::FileChange);
wire_form!(Tests => protocol::Tests);
wire_form!(ContextUpdates => protocol::ContextUpdates);
wire_form!(EscalationDetails => protocol::EscalationDetails);

fn all<A, B: From<A>>(items: Vec<A>) -> Vec<B> {
    items.into_iter().map(B::from).collect()
}

/// `From` both ways between a binding record and the core's whose fields cross unchanged (texts
/// and numbers), with `From` (`: into`: a record, an enum) or item by item (`: []`, a list). Every field is named on both sides, so that a field the core adds fails
/// to compile here until it crosses.
macro_rules! same_record {
    ($ours:ident <=> $theirs:path { $($field:ident $(: $how:tt)?),+ $(,)? }) => {
        impl From<$theirs> for $ours {
            fn from(value: $theirs) -> Self {
                use $theirs as Theirs;
                let Theirs { $($field),+ } = value;
                $ours { $($field: same_record!(@cross $field $($how)?)),+ }
            }
        }

        impl From<$ours> for $theirs {
            fn from(value: $ours) -> Self {
                use $theirs as Theirs;
                let $ours { $($field),+ } = value;
                Theirs { $($field: same_record!(@cross $field $($how)?)),+ }
            }
        }
    };
    (@cross $field:ident) => { $field };
    (@cross $field:ident into) => { $field.into() };
    (@cross $field:ident []) => { all($field) };
}

same_record!(InitContext <=> protocol::InitContext {
    project_root, relevant_files, patterns, constraints,
});
same_record!(FileChange <=> protocol::FileChange { path, description });
same_record!(Tests <=> protocol::Tests { added, passing, coverage });
same_record!(ContextUpdates <=> protocol::ContextUpdates {
    new_patterns, architecture_changes, dependencies_added,
});
same_record!(EscalationDetails <=> protocol::EscalationDetails {
    category: into, severity: into, urgency: into, blocker_type: into,
    description, impact, recommendation,
});
same_record!(WorkerReport <=> protocol::WorkerReport {
    status: into, accomplished, files_modified: [], tests: into, issues, validation,
});
same_record!(ErrorReport <=> protocol::ErrorReport {
    error_type: into, severity: into, description, context, attempted_solutions,
    error_messages, affected_files,
});
same_record!(RecoveryInstructions <=> protocol::RecoveryInstructions {
    strategy, steps, alternatives, success_indicators, escalation_trigger,
});
same_record!(CurrentState <=> protocol::CurrentState {
    files_modified, project_status, dependencies, configuration,
});

impl From<protocol::HistoryItem> for ProtocolHistoryItem {
    fn from(item: protocol::HistoryItem) -> Self {
        let protocol::HistoryItem {
            iteration,
            manager_instructions,
            worker_report,
            outcome,
        } = item;
        ProtocolHistoryItem {
            iteration,
            manager_instructions,
            worker_report: worker_report.map(text),
            outcome,
        }
    }
}

impl ProtocolHistoryItem {
    /// The core's item; `field` names it in a problem (`worker_report` text that is not JSON).
    fn core(self, field: &str) -> Result<protocol::HistoryItem> {
        let ProtocolHistoryItem {
            iteration,
            manager_instructions,
            worker_report,
            outcome,
        } = self;
        let worker_report = worker_report
            .map(|report| {
                serde_json::from_str::<Value>(&report).map_err(|e| {
                    HandoffError::invalid(
                        &format!("{field}.worker_report"),
                        format!("is not valid JSON: {e}"),
                    )
                })
            })
            .transpose()?;
        Ok(protocol::HistoryItem {
            iteration,
            manager_instructions,
            worker_report,
            outcome,
        })
    }
}

/// A record of type `$ty` (`ProtocolBody` or the core's) from `$b`, the other one: the fields
/// that cross unchanged are copied, each option and list item by item with `From`, and the
/// ones that need more are given.
macro_rules! body {
    ($ty:ident, $b:ident { $($field:ident: $value:expr),+ $(,)? }) => {
        $ty {
            handoff_type: $b.handoff_type.into(),
            task_id: $b.task_id,
            iteration: $b.iteration,
            instructions: $b.instructions,
            context: $b.context.map(Into::into),
            success_criteria: $b.success_criteria,
            quality_gates: $b.quality_gates,
            worker_report: $b.worker_report.map(Into::into),
            manager_decision: $b.manager_decision.map(Into::into),
            continuation_instructions: $b.continuation_instructions,
            context_updates: $b.context_updates.map(Into::into),
            error_report: $b.error_report.map(Into::into),
            recovery_instructions: $b.recovery_instructions.map(Into::into),
            retry_count: $b.retry_count,
            max_retries: $b.max_retries,
            escalation_details: $b.escalation_details.map(Into::into),
            current_state: $b.current_state.map(Into::into),
            resume_instructions: $b.resume_instructions,
            $($field: $value),+
        }
    };
}

impl From<protocol::ProtocolBody> for ProtocolBody {
    fn from(b: protocol::ProtocolBody) -> Self {
        body!(
            ProtocolBody,
            b {
                timestamp: time(b.timestamp),
                complete_history: all(b.complete_history),
            }
        )
    }
}

impl ProtocolBody {
    /// The core's body, for a record's `to_json` and `to_markdown`: refused only when a caller
    /// set a time beyond what a record can hold, or history text that is not JSON.
    pub(crate) fn core(self) -> Result<protocol::ProtocolBody> {
        use protocol::ProtocolBody as Theirs;
        let b = self;
        let complete_history = b
            .complete_history
            .into_iter()
            .enumerate()
            .map(|(i, item)| item.core(&format!("protocol.complete_history[{i}]")))
            .collect::<Result<_>>()?;
        Ok(body!(
            Theirs,
            b {
                timestamp: utc("protocol.timestamp", b.timestamp)?,
                complete_history: complete_history,
            }
        ))
    }
}

impl From<protocol::Run> for ProtocolRun {
    fn from(run: protocol::Run) -> Self {
        let protocol::Run {
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
        } = run;
        ProtocolRun {
            task_id,
            manager,
            worker,
            escalate_to,
            goal,
            success_criteria,
            message_id,
            started_at: time(started_at),
            updated_at: time(updated_at),
            iteration_started_at: time(iteration_started_at),
            iteration_seconds,
            iteration,
            max_iterations,
            retry_count,
            max_retries,
            phase: phase.into(),
            escalations,
            history: all(history),
            files_modified,
            project_status,
            dependencies,
            configuration,
        }
    }
}

impl From<protocol::RunSummary> for ProtocolRunSummary {
    fn from(summary: protocol::RunSummary) -> Self {
        let protocol::RunSummary {
            task_id,
            phase,
            iterations,
            retries,
            escalations,
            started_at,
            updated_at,
        } = summary;
        ProtocolRunSummary {
            task_id,
            phase: phase.into(),
            iterations,
            retries,
            escalations,
            started_at: time(started_at),
            updated_at: time(updated_at),
        }
    }
}

impl From<protocol::ProtocolStats> for ProtocolStats {
    fn from(stats: protocol::ProtocolStats) -> Self {
        let protocol::ProtocolStats {
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
        } = stats;
        ProtocolStats {
            runs,
            completed,
            first_try_completions,
            first_try_completion_rate,
            escalated,
            escalation_rate,
            retries,
            mean_iterations,
            median_iteration_seconds,
            per_run: all(per_run),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::{
        Claim, Handoff, HandoffKind, HandoffStatus, ListFilter, ManualClock, OpenOptions, Store,
        handoff_from_json,
    };

    fn store() -> (std::sync::Arc<Store>, std::sync::Arc<ManualClock>) {
        let clock = ManualClock::new(None).unwrap();
        let options = OpenOptions {
            clock: Some(clock.clone()),
            ..OpenOptions::default()
        };
        (Store::memory(options).unwrap(), clock)
    }

    fn take(store: &Store, agent: &str) -> Claim {
        store
            .claim_next(agent.into(), None, None, None)
            .unwrap()
            .unwrap_or_else(|| panic!("nothing for {agent}"))
    }

    fn body(handoff: &Handoff) -> &ProtocolBody {
        handoff.protocol.as_ref().unwrap()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    fn initialize(store: &Store, task_id: &str) -> Handoff {
        let context = InitContext {
            project_root: Some("/app".into()),
            relevant_files: strings(&["src/auth.js"]),
            ..InitContext::default()
        };
        store
            .initialize(
                task_id.into(),
                "manager".into(),
                "worker".into(),
                "Add token refresh".into(),
                strings(&["expired tokens are refreshed"]),
                Some(context),
                strings(&["tests pass"]),
                None,
                None,
                None,
            )
            .unwrap()
    }

    fn partial(store: &Store, claim: &Claim, issue: &str) -> Handoff {
        let file = FileChange {
            path: "src/auth.js".into(),
            description: "refresh on 401".into(),
        };
        let tests = Tests {
            added: 2,
            passing: 2,
            coverage: Some("80%".into()),
        };
        store
            .report(
                claim.reference(),
                WorkerStatus::Partial,
                strings(&["refresh on 401"]),
                vec![file],
                Some(tests),
                strings(&[issue]),
                vec![],
            )
            .unwrap()
    }

    /// A run through every call: a report, a refinement, an error and its recovery, an
    /// escalation to a human and its resolution, and the manager's completion; then the run,
    /// its messages and the statistics.
    #[test]
    fn a_run_goes_through_every_call() {
        let (store, clock) = store();
        let init = initialize(&store, "task_12345");
        assert_eq!(
            (
                init.kind,
                init.to_agent.as_deref(),
                init.from_agent.as_deref()
            ),
            (HandoffKind::Initialization, Some("worker"), Some("manager"))
        );
        let sent = body(&init);
        assert_eq!(
            (sent.handoff_type, sent.iteration),
            (HandoffType::Initialization, 1)
        );
        assert_eq!(
            sent.context.as_ref().unwrap().relevant_files,
            ["src/auth.js"]
        );
        assert_eq!(sent.quality_gates, ["tests pass"]);

        clock.advance(Duration::from_secs(60));
        let review = partial(&store, &take(&store, "worker"), "no retries yet");
        assert_eq!(review.to_agent.as_deref(), Some("manager"));
        let report = body(&review).worker_report.as_ref().unwrap();
        assert_eq!(report.status, WorkerStatus::Partial);
        assert_eq!(report.tests.coverage.as_deref(), Some("80%"));

        let updates = ContextUpdates {
            new_patterns: strings(&["retry with backoff"]),
            ..ContextUpdates::default()
        };
        let refine = store
            .decide(
                take(&store, "manager").reference(),
                Decision::Refine,
                Some("Add retries with backoff".into()),
                Some(updates.clone()),
                None,
                Some("the refresh works; the backoff is missing".into()),
            )
            .unwrap()
            .unwrap();
        let sent = body(&refine);
        assert_eq!(refine.to_agent.as_deref(), Some("worker"));
        assert_eq!(
            (
                sent.iteration,
                sent.manager_decision,
                sent.context_updates.as_ref()
            ),
            (2, Some(Decision::Refine), Some(&updates))
        );
        assert_eq!(
            sent.continuation_instructions.as_deref(),
            Some("Add retries with backoff")
        );

        let error = store
            .report_error(
                take(&store, "worker").reference(),
                ErrorType::Dependency,
                Severity::High,
                "The HTTP client has no retry hook".into(),
                "adding retries".into(),
                strings(&["patched the client"]),
                strings(&["TypeError: hook is not a function"]),
                strings(&["src/http.js"]),
            )
            .unwrap();
        assert_eq!(error.kind, HandoffKind::ErrorRecovery);
        let sent = body(&error);
        assert_eq!(sent.error_report.as_ref().unwrap().severity, Severity::High);
        assert_eq!((sent.retry_count, sent.max_retries), (Some(0), Some(3)));

        let recovery = store
            .recover(
                take(&store, "manager").reference(),
                "Wrap the client".into(),
                strings(&["write a wrapper", "retry in it"]),
                strings(&["switch clients"]),
                vec![],
                Some("the wrapper fails too".into()),
            )
            .unwrap();
        assert_eq!(recovery.to_agent.as_deref(), Some("worker"));
        let sent = body(&recovery);
        assert_eq!(sent.recovery_instructions.as_ref().unwrap().steps.len(), 2);
        assert_eq!(sent.retry_count, Some(1));

        partial(&store, &take(&store, "worker"), "CI is flaky");
        let escalation = store
            .escalate(
                take(&store, "manager").reference(),
                Category::Technical,
                Severity::High,
                Urgency::High,
                BlockerType::Environment,
                "CI fails at random".into(),
                "Nothing can be merged".into(),
                "Fix the CI runners".into(),
            )
            .unwrap();
        assert_eq!(
            (escalation.kind, escalation.to_agent.as_deref()),
            (HandoffKind::Escalation, Some("human"))
        );
        let sent = body(&escalation);
        let details = sent.escalation_details.as_ref().unwrap();
        assert_eq!(details.blocker_type, BlockerType::Environment);
        let outcomes: Vec<&str> = sent
            .complete_history
            .iter()
            .map(|item| item.outcome.as_str())
            .collect();
        assert_eq!(outcomes, ["refine", "error", "escalate"]);
        let first: Value =
            serde_json::from_str(sent.complete_history[0].worker_report.as_ref().unwrap()).unwrap();
        assert_eq!(first["status"], "PARTIAL");
        assert_eq!(
            sent.current_state.as_ref().unwrap().files_modified,
            ["src/auth.js"]
        );

        // A human's message is not a worker's: reporting on it is out of turn.
        let human = take(&store, "human");
        let Err(HandoffError::InvalidTransition { .. }) = store.report(
            human.reference(),
            WorkerStatus::Completed,
            vec![],
            vec![],
            None,
            vec![],
            vec![],
        ) else {
            panic!("a report on an escalation went through");
        };
        let resolved = store
            .resolve(
                human.reference(),
                "CI fixed".into(),
                Some("Finish the retries".into()),
            )
            .unwrap();
        assert_eq!(resolved.to_agent.as_deref(), Some("manager"));
        assert_eq!(
            body(&resolved).resume_instructions.as_deref(),
            Some("CI fixed\n\nTo resume: Finish the retries")
        );

        let done = store
            .decide(
                take(&store, "manager").reference(),
                Decision::Complete,
                None,
                None,
                None,
                None,
            )
            .unwrap();
        assert!(done.is_none());

        let run = store.protocol_run("task_12345".into()).unwrap();
        assert_eq!(run.phase, ProtocolPhase::Completed);
        assert_eq!((run.iteration, run.retry_count, run.escalations), (2, 1, 1));
        assert_eq!(
            (run.manager.as_str(), run.goal.as_str()),
            ("manager", "Add token refresh")
        );
        assert_eq!(run.iteration_seconds[0], 60.0);

        let history = store.protocol_history("task_12345".into()).unwrap();
        let kinds: Vec<HandoffType> = history.iter().map(|h| body(h).handoff_type).collect();
        use HandoffType::{ErrorRecovery, Escalation, Initialization, Progress};
        assert_eq!(
            kinds,
            [
                Initialization,
                Progress,
                Progress,
                ErrorRecovery,
                ErrorRecovery,
                Progress,
                Escalation,
                Progress
            ]
        );
        assert!(history.iter().all(|h| h.status == HandoffStatus::Completed));
        // Every message survives the way back to the core and its JSON form.
        for handoff in &history {
            assert_eq!(
                &handoff_from_json(handoff.to_json().unwrap()).unwrap(),
                handoff
            );
            assert!(handoff.to_markdown(true).is_ok());
        }

        let stats = store.protocol_stats().unwrap();
        assert_eq!(
            (stats.runs, stats.completed, stats.escalated, stats.retries),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (stats.first_try_completion_rate, stats.escalation_rate),
            (0.0, 1.0)
        );
        assert_eq!(stats.per_run[0].task_id, "task_12345");
        assert_eq!(stats.per_run[0].phase, ProtocolPhase::Completed);
    }

    /// A decision to escalate carries its details; without them it is refused.
    #[test]
    fn deciding_to_escalate_needs_its_details() {
        let (store, _) = store();
        initialize(&store, "t1");
        partial(&store, &take(&store, "worker"), "stuck");
        let manager = take(&store, "manager");
        let decide = |details| {
            store.decide(
                manager.reference(),
                Decision::Escalate,
                None,
                None,
                details,
                None,
            )
        };
        let Err(HandoffError::Validation { problems, .. }) = decide(None) else {
            panic!("an escalation without details went through");
        };
        assert_eq!(problems[0].field, "escalation_details");
        let details = EscalationDetails {
            category: Category::Resource,
            severity: Severity::Critical,
            urgency: Urgency::Immediate,
            blocker_type: BlockerType::Access,
            description: "No access to the staging database".into(),
            impact: "Cannot test the migration".into(),
            recommendation: "Grant read access".into(),
        };
        let escalation = decide(Some(details.clone())).unwrap().unwrap();
        assert_eq!(body(&escalation).escalation_details, Some(details));
        assert_eq!(
            store.protocol_run("t1".into()).unwrap().phase,
            ProtocolPhase::Escalated
        );
    }

    /// Bad input is refused before anything is written, each problem named by its field.
    #[test]
    fn malformed_reports_name_the_field_and_change_nothing() {
        let (store, _) = store();
        initialize(&store, "t1");
        let claim = take(&store, "worker");
        let before = (
            store.list(ListFilter::default()).unwrap(),
            store.protocol_run("t1".into()).unwrap(),
        );
        let fields = |status, files: Vec<FileChange>, issues: Vec<String>| -> Vec<String> {
            let result = store.report(
                claim.reference(),
                status,
                vec![],
                files,
                None,
                issues,
                vec![],
            );
            let Err(HandoffError::Validation { problems, .. }) = result else {
                panic!("a malformed report went through: {result:?}");
            };
            problems.into_iter().map(|p| p.field).collect()
        };
        let undescribed = FileChange {
            path: "src/auth.js".into(),
            description: " ".into(),
        };
        assert_eq!(
            fields(WorkerStatus::Completed, vec![undescribed], vec![]),
            ["files_modified[0].description"]
        );
        let huge = "x".repeat(64 * 1024 + 1);
        assert_eq!(
            fields(WorkerStatus::Partial, vec![], vec![huge]),
            ["issues[0]"]
        );
        assert_eq!(fields(WorkerStatus::Failed, vec![], vec![]), ["issues"]);
        assert_eq!(
            (
                store.list(ListFilter::default()).unwrap(),
                store.protocol_run("t1".into()).unwrap()
            ),
            before
        );

        let Err(HandoffError::Validation { problems, .. }) = store.initialize(
            "t2".into(),
            "manager".into(),
            "worker".into(),
            " ".into(),
            vec![],
            None,
            vec![],
            None,
            None,
            None,
        ) else {
            panic!("an empty initialization went through");
        };
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["instructions", "success_criteria"]);
        let Err(HandoffError::NotFound { what, .. }) = store.protocol_run("t2".into()) else {
            panic!("a refused initialization started a run");
        };
        assert_eq!(what, "protocol run");
    }

    /// A body a caller edited into something no record can hold is named by its path.
    #[test]
    fn an_edited_body_is_checked_on_the_way_back() {
        let (store, _) = store();
        initialize(&store, "t1");
        partial(&store, &take(&store, "worker"), "stuck");
        store
            .escalate(
                take(&store, "manager").reference(),
                Category::Technical,
                Severity::Medium,
                Urgency::Low,
                BlockerType::Skill,
                "d".into(),
                "i".into(),
                "r".into(),
            )
            .unwrap();
        let mut escalation = store.protocol_history("t1".into()).unwrap().pop().unwrap();
        let sent = escalation.protocol.as_mut().unwrap();
        sent.complete_history[0].worker_report = Some("{".into());
        let Err(HandoffError::Validation { problems, .. }) = escalation.to_json() else {
            panic!("history text that is not JSON went through");
        };
        assert_eq!(
            problems[0].field,
            "protocol.complete_history[0].worker_report"
        );
    }
}
