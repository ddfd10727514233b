//! The manager/worker protocol's operations (docs/design.md §8), under the names every face shows:
//! Python's `report`, the CLI's `handoff protocol report`, the MCP tool `protocol_report`.
//! Each call but `initialize` is made with the claim of the message it answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Problem, Result};
use crate::ops::{Access, Arguments, ClaimInput, Operation};
use crate::protocol::{
    BlockerType, Category, ContextUpdates, Decision, ErrorReport, ErrorType, EscalationDetails,
    FileChange, InitContext, Initialize as NewRun, ProtocolStats as Stats, RecoveryInstructions,
    Run, Severity, Tests, Urgency, WorkerReport, WorkerStatus,
};
use crate::record::Handoff;
use crate::store::Store;
use crate::validate::{self, Limits};

/// The claim's problems and every text or list of `body` (named as the arguments are) that
/// breaks `limits`.
fn problems_of(claim: Option<&ClaimInput>, body: &impl Serialize, limits: &Limits) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(claim) = claim {
        claim.problems(&mut problems);
    }
    match serde_json::to_value(body) {
        Ok(value) => problems.extend(validate::sizes("", &value, limits)),
        Err(err) => problems.push(Problem::new("(arguments)", err.to_string())),
    }
    problems
}

/// Starts a manager/worker run on a task: the initialization (iteration 1) goes to the worker,
/// who takes it with `claim_next` and answers with `report` or `report_error`. The manager →
/// worker checks run first (instructions given, at least one success criterion), every problem
/// at once; a task runs the protocol once.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeArgs {
    /// The task the run works on (an id).
    pub task_id: String,
    /// The agent that reviews and decides.
    pub manager: String,
    /// The agent that does the work.
    pub worker: String,
    /// What the worker is to do.
    pub instructions: String,
    /// How success is judged: at least one criterion.
    pub success_criteria: Vec<String>,
    /// The context: `project_root`, `relevant_files`, `patterns`, `constraints`.
    #[serde(default)]
    pub context: Option<InitContext>,
    /// Standards the work must meet.
    #[serde(default)]
    pub quality_gates: Vec<String>,
    /// Iterations allowed before a CONTINUE or REFINE escalates instead (default 10).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Recoveries allowed before the run escalates by itself (default 3).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Who gets an escalation (default `human`).
    #[serde(default)]
    pub escalate_to: Option<String>,
}

impl InitializeArgs {
    fn into_new(self) -> NewRun {
        NewRun {
            task_id: self.task_id,
            manager: self.manager,
            worker: self.worker,
            instructions: self.instructions,
            success_criteria: self.success_criteria,
            context: self.context,
            quality_gates: self.quality_gates,
            max_iterations: self.max_iterations,
            max_retries: self.max_retries,
            escalate_to: self.escalate_to,
        }
    }
}

impl Arguments for InitializeArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        #[derive(Serialize)]
        struct Texts<'a> {
            instructions: &'a str,
            success_criteria: &'a [String],
            context: &'a Option<InitContext>,
            quality_gates: &'a [String],
        }
        let texts = Texts {
            instructions: &self.instructions,
            success_criteria: &self.success_criteria,
            context: &self.context,
            quality_gates: &self.quality_gates,
        };
        // The manager → worker checks too, before anything is opened or written (the CLI
        // creates no store for a refused run); the store checks them again as it starts it.
        let checked = Run::initialize(self.clone().into_new(), chrono::DateTime::UNIX_EPOCH);
        let mut problems = checked
            .err()
            .map(|err| err.problems().to_vec())
            .unwrap_or_default();
        problems.extend(problems_of(None, &texts, limits));
        problems
    }
}

/// The `initialize` operation.
pub struct Initialize;

impl Operation for Initialize {
    const NAME: &'static str = "initialize";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "initialize"));
    const POSITIONAL: &'static [&'static str] = &["task_id"];
    type Args = InitializeArgs;
    type Output = Handoff;

    fn run(store: &Store, args: InitializeArgs) -> Result<Handoff> {
        store.initialize(args.into_new())
    }
}

/// The worker's report on the instructions it holds: a `progress` message goes to the
/// manager. The worker → manager checks run first: every changed file described, issues
/// given unless the status is COMPLETED.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportArgs {
    /// The claim of the instructions, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// How far the work got.
    pub status: WorkerStatus,
    /// What was done.
    #[serde(default)]
    pub accomplished: Vec<String>,
    /// The files changed, each with `path` and `description`.
    #[serde(default)]
    pub files_modified: Vec<FileChange>,
    /// Tests: `added`, `passing`, `coverage`.
    #[serde(default)]
    pub tests: Option<Tests>,
    /// Problems met (required unless the status is COMPLETED).
    #[serde(default)]
    pub issues: Vec<String>,
    /// How the work was verified.
    #[serde(default)]
    pub validation: Vec<String>,
}

impl ReportArgs {
    fn report(&self) -> WorkerReport {
        WorkerReport {
            status: self.status,
            accomplished: self.accomplished.clone(),
            files_modified: self.files_modified.clone(),
            tests: self.tests.clone().unwrap_or_default(),
            issues: self.issues.clone(),
            validation: self.validation.clone(),
        }
    }
}

impl Arguments for ReportArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        problems_of(Some(&self.claim), &self.report(), limits)
    }
}

/// The `report` operation.
pub struct Report;

impl Operation for Report {
    const NAME: &'static str = "report";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "report"));
    const POSITIONAL: &'static [&'static str] = &["claim", "status"];
    type Args = ReportArgs;
    type Output = Handoff;

    fn run(store: &Store, args: ReportArgs) -> Result<Handoff> {
        let report = args.report();
        store.report(args.claim.into_ref()?, report)
    }
}

/// The manager's decision on the report (or the human's resolution) it holds. CONTINUE and
/// REFINE send `instructions` to the worker for the next iteration (or, past `max_iterations`,
/// an escalation); COMPLETE ends the run and returns nothing; ESCALATE sends
/// `escalation_details` to whoever the run escalates to.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideArgs {
    /// The claim of the report, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// The decision.
    pub decision: Decision,
    /// What the worker is to do next (required for CONTINUE and REFINE; the message's
    /// `continuation_instructions`).
    #[serde(default)]
    pub instructions: Option<String>,
    /// What the manager learnt: `new_patterns`, `architecture_changes`, `dependencies_added`.
    #[serde(default)]
    pub context_updates: Option<ContextUpdates>,
    /// Why a human is needed (required for ESCALATE).
    #[serde(default)]
    pub escalation_details: Option<EscalationDetails>,
    /// The manager's words on the report: the answered message's outcome, beside the
    /// decision.
    #[serde(default)]
    pub summary: Option<String>,
}

impl Arguments for DecideArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        #[derive(Serialize)]
        struct Texts<'a> {
            instructions: &'a Option<String>,
            context_updates: &'a Option<ContextUpdates>,
            escalation_details: &'a Option<EscalationDetails>,
            summary: &'a Option<String>,
        }
        let texts = Texts {
            instructions: &self.instructions,
            context_updates: &self.context_updates,
            escalation_details: &self.escalation_details,
            summary: &self.summary,
        };
        problems_of(Some(&self.claim), &texts, limits)
    }
}

/// The `decide` operation.
pub struct Decide;

impl Operation for Decide {
    const NAME: &'static str = "decide";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "decide"));
    const POSITIONAL: &'static [&'static str] = &["claim", "decision"];
    type Args = DecideArgs;
    type Output = Option<Handoff>;

    fn run(store: &Store, args: DecideArgs) -> Result<Option<Handoff>> {
        store.decide(
            args.claim.into_ref()?,
            args.decision,
            args.instructions,
            args.context_updates,
            args.escalation_details,
            args.summary.as_deref(),
        )
    }
}

/// The worker's error report on the instructions it holds: an `error_recovery` message goes
/// to the manager, who answers with `recover` or `escalate`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportErrorArgs {
    /// The claim of the instructions, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// What kind of error.
    pub error_type: ErrorType,
    /// How bad it is.
    pub severity: Severity,
    /// What went wrong.
    pub description: String,
    /// Where it happened.
    #[serde(default)]
    pub context: String,
    /// What was tried.
    #[serde(default)]
    pub attempted_solutions: Vec<String>,
    /// The messages seen.
    #[serde(default)]
    pub error_messages: Vec<String>,
    /// The files involved.
    #[serde(default)]
    pub affected_files: Vec<String>,
}

impl ReportErrorArgs {
    fn report(&self) -> ErrorReport {
        ErrorReport {
            error_type: self.error_type,
            severity: self.severity,
            description: self.description.clone(),
            context: self.context.clone(),
            attempted_solutions: self.attempted_solutions.clone(),
            error_messages: self.error_messages.clone(),
            affected_files: self.affected_files.clone(),
        }
    }
}

impl Arguments for ReportErrorArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        problems_of(Some(&self.claim), &self.report(), limits)
    }
}

/// The `report_error` operation.
pub struct ReportError;

impl Operation for ReportError {
    const NAME: &'static str = "report_error";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "report-error"));
    const POSITIONAL: &'static [&'static str] = &["claim", "error_type", "severity", "description"];
    type Args = ReportErrorArgs;
    type Output = Handoff;

    fn run(store: &Store, args: ReportErrorArgs) -> Result<Handoff> {
        let report = args.report();
        store.report_error(args.claim.into_ref()?, report)
    }
}

/// The manager's recovery steps for the error report it holds: an `error_recovery` message
/// goes to the worker with one retry more; past `max_retries` the run escalates instead.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoverArgs {
    /// The claim of the error report, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// The approach, in a sentence.
    pub strategy: String,
    /// What the worker is to do, in order (at least one step).
    pub steps: Vec<String>,
    /// Other approaches if this one fails.
    #[serde(default)]
    pub alternatives: Vec<String>,
    /// How to tell the recovery worked.
    #[serde(default)]
    pub success_indicators: Vec<String>,
    /// When the worker should give up and report an error again.
    #[serde(default)]
    pub escalation_trigger: Option<String>,
}

impl RecoverArgs {
    fn recovery(&self) -> RecoveryInstructions {
        RecoveryInstructions {
            strategy: self.strategy.clone(),
            steps: self.steps.clone(),
            alternatives: self.alternatives.clone(),
            success_indicators: self.success_indicators.clone(),
            escalation_trigger: self.escalation_trigger.clone(),
        }
    }
}

impl Arguments for RecoverArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        problems_of(Some(&self.claim), &self.recovery(), limits)
    }
}

/// The `recover` operation.
pub struct Recover;

impl Operation for Recover {
    const NAME: &'static str = "recover";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "recover"));
    const POSITIONAL: &'static [&'static str] = &["claim", "strategy", "steps"];
    type Args = RecoverArgs;
    type Output = Handoff;

    fn run(store: &Store, args: RecoverArgs) -> Result<Handoff> {
        let recovery = args.recovery();
        store.recover(args.claim.into_ref()?, recovery)
    }
}

/// The manager hands the run to a human: an `escalation` goes to whoever the run escalates
/// to, with the whole history and where the work stands.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalateArgs {
    /// The claim of the report or error report, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// What the escalation is about.
    pub category: Category,
    /// How bad it is (at least medium).
    pub severity: Severity,
    /// How soon a human must act.
    pub urgency: Urgency,
    /// What blocks the run.
    pub blocker_type: BlockerType,
    /// What blocks the run.
    pub description: String,
    /// What happens if nobody acts.
    pub impact: String,
    /// What the manager suggests.
    pub recommendation: String,
}

impl EscalateArgs {
    fn details(&self) -> EscalationDetails {
        EscalationDetails {
            category: self.category,
            severity: self.severity,
            urgency: self.urgency,
            blocker_type: self.blocker_type,
            description: self.description.clone(),
            impact: self.impact.clone(),
            recommendation: self.recommendation.clone(),
        }
    }
}

impl Arguments for EscalateArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        problems_of(Some(&self.claim), &self.details(), limits)
    }
}

/// The `escalate` operation.
pub struct Escalate;

impl Operation for Escalate {
    const NAME: &'static str = "escalate";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "escalate"));
    const POSITIONAL: &'static [&'static str] = &[
        "claim",
        "category",
        "severity",
        "urgency",
        "blocker_type",
        "description",
        "impact",
        "recommendation",
    ];
    type Args = EscalateArgs;
    type Output = Handoff;

    fn run(store: &Store, args: EscalateArgs) -> Result<Handoff> {
        let details = args.details();
        store.escalate(args.claim.into_ref()?, details)
    }
}

/// A human's answer to the escalation they hold: a `progress` message carrying it goes to
/// the manager, who decides how the worker goes on; the run's iteration and retry allowances
/// start afresh.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveArgs {
    /// The claim of the escalation, as `claim` or `claim_next` returned it.
    pub claim: ClaimInput,
    /// What the human decided or did.
    pub resolution: String,
    /// How the run is to go on, when it is not plain from the resolution.
    #[serde(default)]
    pub resume_instructions: Option<String>,
}

impl Arguments for ResolveArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        #[derive(Serialize)]
        struct Texts<'a> {
            resolution: &'a str,
            resume_instructions: &'a Option<String>,
        }
        let texts = Texts {
            resolution: &self.resolution,
            resume_instructions: &self.resume_instructions,
        };
        problems_of(Some(&self.claim), &texts, limits)
    }
}

/// The `resolve` operation.
pub struct Resolve;

impl Operation for Resolve {
    const NAME: &'static str = "resolve";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "resolve"));
    const POSITIONAL: &'static [&'static str] = &["claim", "resolution"];
    type Args = ResolveArgs;
    type Output = Handoff;

    fn run(store: &Store, args: ResolveArgs) -> Result<Handoff> {
        store.resolve(
            args.claim.into_ref()?,
            &args.resolution,
            args.resume_instructions.as_deref(),
        )
    }
}

/// Declares a read of one task's run: its argument struct and its `Operation` impl.
macro_rules! run_read {
    ($(#[$doc:meta])* $op:ident, $args:ident, $name:literal, $verb:literal,
     $output:ty, |$store:ident, $task:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $args {
            /// The run's task.
            pub task_id: String,
        }

        impl Arguments for $args {}

        #[doc = concat!("The `", $name, "` operation.")]
        pub struct $op;

        impl Operation for $op {
            const NAME: &'static str = $name;
            const ACCESS: Access = Access::Reads;
            const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", $verb));
            const POSITIONAL: &'static [&'static str] = &["task_id"];
            type Args = $args;
            type Output = $output;

            fn run($store: &Store, args: $args) -> Result<$output> {
                let $task = args.task_id.as_str();
                $body
            }
        }
    };
}

run_read!(
    /// A task's protocol run as it stands: its phase (who holds the latest message), the
    /// iteration, retries, escalations, history and the id of the message in flight.
    ProtocolRun, ProtocolRunArgs, "protocol_run", "show", Run,
    |store, task| store.protocol_run(task)
);

run_read!(
    /// The messages of a task's run, oldest first, each a handoff with its `protocol` body.
    ProtocolHistory, ProtocolHistoryArgs, "protocol_history", "history",
    Vec<Handoff>,
    |store, task| store.protocol_history(task)
);

/// How the store's protocol runs went: runs, completions, the first-try completion rate,
/// the escalation rate, retries, iterations per run and the median time per iteration.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolStatsArgs {}

impl Arguments for ProtocolStatsArgs {}

/// The `protocol_stats` operation.
pub struct ProtocolStats;

impl Operation for ProtocolStats {
    const NAME: &'static str = "protocol_stats";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("protocol", "stats"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = ProtocolStatsArgs;
    type Output = Stats;

    fn run(store: &Store, _: ProtocolStatsArgs) -> Result<Stats> {
        store.protocol_stats()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use super::*;
    use crate::ops::{self, catalog};

    fn reference(claim: &crate::Claim) -> Value {
        json!({"handoff_id": claim.handoff.id, "token": claim.token,
               "secret": claim.secret.expose()})
    }

    fn take(store: &Store, agent: &str) -> Value {
        let claim = ops::ClaimNext::call(store, json!({ "agent": agent }))
            .unwrap()
            .unwrap();
        reference(&claim)
    }

    #[test]
    fn a_run_goes_through_the_operations_with_the_seeds_names() {
        let store = Store::memory();
        let init = Initialize::call(
            &store,
            json!({"task_id": "task_12345", "manager": "manager", "worker": "worker",
                   "instructions": "Add token refresh", "success_criteria": ["retries"],
                   "context": {"project_root": "/app", "relevant_files": ["src/auth.js"]}}),
        )
        .unwrap();
        let body = serde_json::to_value(init.protocol.unwrap()).unwrap();
        assert_eq!(body["handoff_type"], "initialization");
        assert_eq!(body["context"]["relevant_files"][0], "src/auth.js");
        let review = Report::call(
            &store,
            json!({"claim": take(&store, "worker"), "status": "COMPLETED",
                   "files_modified": [{"path": "src/auth.js", "description": "refresh"}],
                   "tests": {"added": 3, "passing": 3}}),
        )
        .unwrap();
        assert_eq!(review.to_agent.as_deref(), Some("manager"));
        let done = Decide::call(
            &store,
            json!({"claim": take(&store, "manager"), "decision": "COMPLETE"}),
        )
        .unwrap();
        assert!(done.is_none());
        let run = ProtocolRun::call(&store, json!({"task_id": "task_12345"})).unwrap();
        assert_eq!(run.phase, crate::protocol::Phase::Completed);
        let history = ProtocolHistory::call(&store, json!({"task_id": "task_12345"})).unwrap();
        assert_eq!(history.len(), 2);
        let stats = ProtocolStats::call(&store, json!({})).unwrap();
        assert_eq!(
            (
                stats.runs,
                stats.first_try_completions,
                stats.first_try_completion_rate
            ),
            (1, 1, 1.0)
        );
        let tools: Vec<String> = catalog()
            .iter()
            .filter(|op| op.command.is_some_and(|(group, _)| group == "protocol"))
            .map(ops::OperationInfo::tool)
            .collect();
        assert_eq!(
            tools,
            [
                "protocol_initialize",
                "protocol_report",
                "protocol_decide",
                "protocol_report_error",
                "protocol_recover",
                "protocol_escalate",
                "protocol_resolve",
                "protocol_show",
                "protocol_history",
                "protocol_stats"
            ]
        );
    }

    #[test]
    fn malformed_bodies_name_the_field_and_change_nothing() {
        let store = Store::memory();
        Initialize::call(
            &store,
            json!({"task_id": "t1", "manager": "m", "worker": "w",
                   "instructions": "Do it", "success_criteria": ["done"]}),
        )
        .unwrap();
        let claim = take(&store, "w");
        let before = (
            store.list(&crate::ListFilter::default()).unwrap(),
            store.protocol_run("t1").unwrap(),
        );
        let fields = |args: Value| -> Vec<String> {
            let err = Report::call(&store, args).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Validation, "{err}");
            err.problems().iter().map(|p| p.field.clone()).collect()
        };
        // A wrong enum value, a file without its description, an unknown name.
        assert_eq!(
            fields(json!({"claim": claim, "status": "DONE",
                          "files_modified": [{"path": "a"}], "mood": "good"})),
            ["mood", "status", "files_modified[0].description"]
        );
        // An oversized item.
        let huge = "x".repeat(store.limits().max_field_bytes + 1);
        assert_eq!(
            fields(json!({"claim": claim, "status": "PARTIAL", "issues": [huge]})),
            ["issues[0]"]
        );
        // Nesting past the limit. (Deeper JSON text, 10,000 levels, is refused by each face
        // as it reads it, before a value is built: see the faces' tests.)
        let mut deep = json!("leaf");
        for _ in 0..1_000 {
            deep = json!([deep]);
        }
        let err = Report::call(
            &store,
            json!({"claim": claim, "status": "PARTIAL",
                                              "accomplished": deep}),
        )
        .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Validation, "{err}");
        // The checks of the direction, with the call's own names.
        assert_eq!(
            fields(json!({"claim": claim, "status": "FAILED"})),
            ["issues"]
        );
        assert_eq!(
            (
                store.list(&crate::ListFilter::default()).unwrap(),
                store.protocol_run("t1").unwrap()
            ),
            before
        );
        let err = Initialize::call(
            &store,
            json!({"task_id": "t2", "manager": "m", "worker": "w",
                   "instructions": " ", "success_criteria": []}),
        )
        .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["instructions", "success_criteria"]);
    }
}
