//! The conformance cases of manager/worker protocol runs.

use super::*;

/// A manager/worker run (docs/design.md §8): each call settles the caller's claim and sends the next
/// message in one transaction; a call out of turn or with bad input changes nothing; a limit
/// escalates by itself; history and statistics read back what happened.
pub fn protocol_runs_answer_each_message_once(store: Store) {
    use crate::protocol::{Decision, Initialize, Phase};
    use serde_json::{from_value, json};

    let (store, clock) = timed(store);
    let take = |agent: &str| {
        store
            .claim_next(agent, None, MINUTE)
            .unwrap()
            .unwrap_or_else(|| panic!("{agent} has a message"))
    };
    let init = store
        .initialize(Initialize {
            task_id: "task_12345".into(),
            manager: "manager".into(),
            worker: "worker".into(),
            instructions: "Add token refresh to src/auth.js".into(),
            success_criteria: vec!["refresh retried with backoff".into()],
            max_retries: Some(1),
            ..Initialize::default()
        })
        .unwrap();
    assert_eq!(
        (init.kind, init.to_agent.as_deref()),
        (Kind::Initialization, Some("worker"))
    );
    let body = init.protocol.as_ref().unwrap();
    assert_eq!((body.iteration, body.task_id.as_str()), (1, "task_12345"));
    // A task runs the protocol once.
    let again = store.initialize(Initialize {
        task_id: "task_12345".into(),
        manager: "m".into(),
        worker: "w".into(),
        instructions: "again".into(),
        success_criteria: vec!["x".into()],
        ..Initialize::default()
    });
    assert_eq!(again.unwrap_err().problems()[0].field, "task_id");

    let work = take("worker");
    clock.advance(Duration::from_secs(30));
    // Bad input and calls out of turn: typed errors, nothing written.
    let before = (snapshot(&store), store.protocol_run("task_12345").unwrap());
    let undocumented = from_value(json!({"status": "PARTIAL",
        "files_modified": [{"path": "src/auth.js", "description": ""}]}))
    .unwrap();
    let err = store.report(&work, undocumented).unwrap_err();
    let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["files_modified[0].description", "issues"]);
    let err = store
        .decide(&work, Decision::Complete, None, None, None, None)
        .unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    let plain = store.create(NewHandoff::new("t9", "no protocol")).unwrap();
    let plain = store.claim(&plain.id, "worker", MINUTE).unwrap();
    let report = from_value(json!({"status": "COMPLETED"})).unwrap();
    let err = store.report(&plain, report).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    store.cancel_claim(&plain, None).unwrap();
    let after = store.list(&ListFilter::default()).unwrap();
    assert_eq!(
        (after.len(), store.protocol_run("task_12345").unwrap()),
        (before.0.0.len() + 1, before.1.clone())
    );

    // Report → REFINE → an error, a recovery, a second error → past max_retries, a human.
    let partial = from_value(
        json!({"status": "PARTIAL", "accomplished": ["refresh call"],
        "files_modified": [{"path": "src/auth.js", "description": "refresh on 401"}],
        "tests": {"added": 5, "passing": 5, "coverage": "85%"}, "issues": ["no backoff"]}),
    )
    .unwrap();
    let review = store.report(&work, partial).unwrap();
    let settled = store.get(&work.handoff.id).unwrap();
    assert_eq!(
        (settled.status, settled.outcome.as_deref()),
        (Status::Completed, Some("reported PARTIAL"))
    );
    assert_eq!(
        (
            review.kind,
            review.to_agent.as_deref(),
            review.parent_id.as_deref()
        ),
        (
            Kind::Progress,
            Some("manager"),
            Some(work.handoff.id.as_str())
        )
    );
    assert_eq!(review.modified_files, ["src/auth.js"]);
    // The settled message answers nothing any more.
    let err = store
        .report(&work, from_value(json!({"status": "COMPLETED"})).unwrap())
        .unwrap_err();
    assert!(
        matches!(
            kind_of(&err),
            ErrorKind::InvalidTransition | ErrorKind::LeaseLost
        ),
        "{err}"
    );
    let decision = take("manager");
    let refine = store
        .decide(
            &decision,
            Decision::Refine,
            Some("Add exponential backoff".into()),
            None,
            None,
            Some("the refresh works; no backoff yet"),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        store.get(&decision.handoff.id).unwrap().outcome.as_deref(),
        Some("REFINE: the refresh works; no backoff yet")
    );
    let body = refine.protocol.as_ref().unwrap();
    assert_eq!(
        (
            body.iteration,
            body.manager_decision,
            refine.to_agent.as_deref()
        ),
        (2, Some(Decision::Refine), Some("worker"))
    );
    let error = || {
        from_value(json!({"error_type": "configuration", "severity": "high",
            "description": "the sandbox rejects the client id",
            "error_messages": ["invalid_client: unknown client id 4711"]}))
        .unwrap()
    };
    let work = take("worker");
    clock.advance(Duration::from_secs(50));
    let failed = store.report_error(&work, error()).unwrap();
    assert_eq!(failed.kind, Kind::ErrorRecovery);
    let recovery = || {
        from_value(json!({"strategy": "use the staging client id",
            "steps": ["read STAGING_CLIENT_ID", "retry"]}))
        .unwrap()
    };
    let retry = store.recover(&take("manager"), recovery()).unwrap();
    assert_eq!(retry.protocol.as_ref().unwrap().retry_count, Some(1));
    store.report_error(&take("worker"), error()).unwrap();
    let escalation = store.recover(&take("manager"), recovery()).unwrap();
    let body = escalation.protocol.as_ref().unwrap();
    assert_eq!(
        (escalation.kind, escalation.to_agent.as_deref()),
        (Kind::Escalation, Some("human"))
    );
    assert_eq!(body.complete_history.len(), 3);
    // Each iteration with the worker's answer, read back from the messages.
    let answers: Vec<_> = body
        .complete_history
        .iter()
        .map(|item| {
            let answer = item.worker_report.as_ref().unwrap();
            answer
                .get("status")
                .or_else(|| answer.get("error_type"))
                .unwrap()
                .clone()
        })
        .collect();
    assert_eq!(
        answers,
        [
            json!("PARTIAL"),
            json!("configuration"),
            json!("configuration")
        ]
    );
    assert_eq!(
        body.current_state.as_ref().unwrap().files_modified,
        ["src/auth.js"]
    );
    // The human reads every iteration's answer and the worker's last error by name (seed
    // 004 §4), in the record's Markdown and in the packet.
    let md = escalation.to_markdown();
    assert!(md.contains("## Complete History"), "{md}");
    assert!(md.contains("Worker: PARTIAL"), "{md}");
    assert!(
        md.contains("- Description: The run reached its max_retries")
            && md.contains("Last error: invalid_client: unknown client id 4711"),
        "{md}"
    );
    let packet = store
        .context_for(&escalation.id, crate::store::ContextOptions::chars(4000))
        .unwrap()
        .to_markdown();
    assert!(
        packet.contains("invalid_client: unknown client id 4711"),
        "{packet}"
    );

    let resumed = store
        .resolve(&take("human"), "Registered the client id; go on", None)
        .unwrap();
    assert_eq!(
        resumed
            .protocol
            .as_ref()
            .unwrap()
            .resume_instructions
            .as_deref(),
        Some("Registered the client id; go on")
    );
    let done = store
        .decide(&take("manager"), Decision::Complete, None, None, None, None)
        .unwrap();
    assert!(done.is_none(), "COMPLETE sends nothing");
    let run = store.protocol_run("task_12345").unwrap();
    assert_eq!(
        (run.phase, run.retry_count, run.escalations, run.message_id),
        (Phase::Completed, 1, 1, None)
    );

    let history = store.protocol_history("task_12345").unwrap();
    let kinds: Vec<_> = history.iter().map(|h| h.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "initialization",
            "progress",
            "progress",
            "error_recovery",
            "error_recovery",
            "error_recovery",
            "escalation",
            "progress"
        ]
    );
    assert!(history.iter().all(|h| h.status == Status::Completed));
    let stats = store.protocol_stats().unwrap();
    assert_eq!(
        (stats.runs, stats.completed, stats.escalated, stats.retries),
        (1, 1, 1, 1)
    );
    assert_eq!(stats.first_try_completion_rate, 0.0);
    assert_eq!(stats.per_run[0].iterations, 2);
    assert_eq!(stats.median_iteration_seconds, Some(30.0));
    assert_eq!(
        kind_of(&store.protocol_history("nope").unwrap_err()),
        ErrorKind::NotFound
    );
}

/// A run's message that goes unanswered (its addressee rejects it, or its claims lapse on
/// every attempt) escalates the run to a human in the same transaction; the human's answer
/// hands it back to the manager.
pub fn lost_protocol_messages_escalate_their_run(store: Store) {
    use crate::protocol::{Initialize, Phase};

    let (store, clock) = timed(store);
    let start = |task: &str| {
        store
            .initialize(Initialize {
                task_id: task.into(),
                manager: "lead".into(),
                worker: "dev".into(),
                instructions: "Add token refresh".into(),
                success_criteria: vec!["a 401 refreshes once".into()],
                ..Initialize::default()
            })
            .unwrap()
    };
    let init = start("rejected");
    store.reject(&init.id, "dev", "not my repository").unwrap();
    let run = store.protocol_run("rejected").unwrap();
    assert_eq!((run.phase, run.escalations), (Phase::Escalated, 1));
    let escalation = store
        .claim_next("human", Some("rejected"), MINUTE)
        .unwrap()
        .unwrap();
    let details = escalation
        .handoff
        .protocol
        .as_ref()
        .and_then(|p| p.escalation_details.as_ref())
        .unwrap();
    assert!(
        details.description.contains("rejected: not my repository"),
        "{}",
        details.description
    );
    assert_eq!(
        escalation.handoff.parent_id.as_deref(),
        Some(init.id.as_str())
    );
    store
        .resolve(&escalation, "Assigned the right repository", None)
        .unwrap();
    assert_eq!(
        store.protocol_run("rejected").unwrap().phase,
        Phase::Resuming
    );

    // A worker that dies holding the message, on every attempt.
    let init = start("lapsed");
    for _ in 0..init.max_attempts {
        store.claim(&init.id, "dev", MINUTE).unwrap();
        clock.advance(MINUTE + Duration::from_secs(1));
        store.reap().unwrap();
    }
    assert_eq!(store.get(&init.id).unwrap().status, Status::Failed);
    let run = store.protocol_run("lapsed").unwrap();
    assert_eq!(run.phase, Phase::Escalated);
    assert_eq!(run.history[0].outcome, "lost");
    // A message that is not the run's current one changes nothing when it ends.
    let history = store.protocol_history("lapsed").unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].kind, Kind::Escalation);
}
