//! The manager/worker protocol (docs/design.md §8) as the foreign languages see it: the core's own
//! types (`handoff_core::protocol`), which derive their uniffi records and enums there: the
//! typed body a protocol message carries (`Handoff.protocol`, with the seed's field names), the
//! enums and records its calls take, and a run with its statistics.
//!
//! The body is typed, not JSON text as `metadata` is: its shape is fixed, and its enums are the
//! ones a caller passes to `report` and `decide`, so a manager reads `workerReport.status` as a
//! `WorkerStatus`. The one free-form part, what a worker reported in an iteration of an
//! escalation's `complete_history` (its report or its error report), is JSON text.
//!
//! A run's types carry `Protocol` in their foreign names (`ProtocolRun`, `ProtocolPhase`,
//! `ProtocolRunSummary`, `ProtocolHistoryItem`; the core names them `uniffi(name = …)`): beside
//! tasks, steps and their history in one flat namespace, a bare `Run`, `Phase` or
//! `HistoryItem` would not say whose.

pub use handoff_core::protocol::{
    BlockerType, Category, ContextUpdates, CurrentState, Decision, ErrorReport, ErrorType,
    EscalationDetails, FileChange, HandoffType, HistoryItem as ProtocolHistoryItem, InitContext,
    Phase as ProtocolPhase, ProtocolBody, ProtocolStats, RecoveryInstructions, Run as ProtocolRun,
    RunSummary as ProtocolRunSummary, Severity, Tests, Urgency, WorkerReport, WorkerStatus,
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::{
        Claim, Handoff, HandoffError, HandoffKind, HandoffStatus, ListFilter, ManualClock,
        OpenOptions, Store, handoff_from_json, handoff_to_json, handoff_to_markdown,
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
        let first = sent.complete_history[0].worker_report.as_ref().unwrap();
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
                &handoff_from_json(handoff_to_json(handoff.clone())).unwrap(),
                handoff
            );
            assert!(handoff_to_markdown(handoff.clone(), true).contains(&handoff.goal));
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

    /// A body a caller edited into something no record can hold is refused on the way back,
    /// by the core's uniffi custom types (uniffi reports it as an `InternalError` naming the
    /// argument): history text that is not JSON, a time beyond a record's years.
    #[test]
    fn what_no_record_can_hold_is_refused_on_the_way_back() {
        use uniffi::{Lift, Lower};
        type Tag = handoff_core::UniFfiTag;
        let text = <String as Lower<Tag>>::lower("{".into());
        assert!(<serde_json::Value as Lift<Tag>>::try_lift(text).is_err());
        let far = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(10_000_000_000_000);
        let at = <std::time::SystemTime as Lower<Tag>>::lower(far);
        assert!(<chrono::DateTime<chrono::Utc> as Lift<Tag>>::try_lift(at).is_err());
    }
}
