//! The conformance cases of tasks: plans run as handoffs, escalations, pauses, updates, members,
//! runs again.

use super::*;

pub(super) fn blog_task() -> NewTask {
    NewTask {
        name: "Write a post".into(),
        goal: "A bilingual blog post".into(),
        steps: vec![
            StepSpec::new("research", "Research", "researcher"),
            StepSpec::new("draft-ko", "Draft (ko)", "writer").after(["research"]),
            StepSpec::new("draft-en", "Draft (en)", "writer").after(["research"]),
            StepSpec::new("review", "Review", "reviewer").after(["draft-ko", "draft-en"]),
        ],
        ..NewTask::default()
    }
}

fn step_status(store: &Store, task: &str, step: &str) -> StepStatus {
    let task = store.get_task(task).unwrap();
    task.steps
        .iter()
        .find(|s| s.spec.id == step)
        .unwrap()
        .status
}

pub fn tasks_run_their_plans_as_handoffs(store: Store) {
    let task = store.create_task(blog_task()).unwrap();
    let id = task.header.id.clone();
    assert_eq!(task.header.status, TaskStatus::Pending);
    assert!(
        store
            .claim_next("researcher", None, MINUTE)
            .unwrap()
            .is_none()
    );
    // A refused plan leaves nothing behind.
    let mut bad = blog_task();
    bad.steps[0].dependencies.push("review".into());
    let err = store.create_task(bad).unwrap_err();
    assert!(err.problems()[0].rule.contains("cycle"), "{err}");
    assert_eq!(store.list_tasks(None, None, None).unwrap().len(), 1);

    let started = store.start_task(&id).unwrap();
    let research = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    // A worker's start changes the step alone: the task keeps its version, and its log takes
    // the start with the step's next change.
    let running = store.get_task(&id).unwrap();
    assert_eq!(running.header.version, started.header.version);
    assert!(running.steps[0].start_to_log.is_some());
    let kinds = |log: &[crate::task::TaskEvent]| -> Vec<String> {
        log.iter().map(|e| e.change.kind().to_owned()).collect()
    };
    assert_eq!(
        kinds(&store.task_events(&id).unwrap()),
        ["created", "started", "step_offered"]
    );
    assert_eq!(research.handoff.kind, Kind::Initialization);
    assert_eq!(research.handoff.task_id, id);
    assert_eq!(research.handoff.metadata["step_id"], "research");
    assert_eq!(step_status(&store, &id, "research"), StepStatus::InProgress);
    assert!(store.claim_next("writer", None, MINUTE).unwrap().is_none());

    store.complete(&research, "notes in research.md").unwrap();
    let mut drafts = Vec::new();
    while let Some(claim) = store.claim_next("writer", None, MINUTE).unwrap() {
        drafts.push(claim);
    }
    assert_eq!(
        drafts.len(),
        2,
        "both drafts are offered by the research's completion"
    );
    for claim in &drafts {
        store.complete(claim, "drafted").unwrap();
    }
    let review = store.claim_next("reviewer", None, MINUTE).unwrap().unwrap();
    store.complete(&review, "approved").unwrap();

    let done = store.get_task(&id).unwrap();
    assert_eq!(done.header.status, TaskStatus::Completed);
    let log = store.task_events(&id).unwrap();
    assert_eq!(
        kinds(&log),
        [
            "created",
            "started",
            "step_offered",
            "step_started",
            "step_completed",
            "step_offered",
            "step_offered",
            "step_started",
            "step_completed",
            "step_started",
            "step_completed",
            "step_offered",
            "step_started",
            "step_completed",
            "completed",
        ]
    );
    assert!(log.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
    // Each start is logged as it happened: by its worker, at its claim.
    assert_eq!(log[3].actor.as_deref(), Some("researcher"));
    assert_eq!(Some(log[3].at), running.steps[0].started_at);
    assert!(log[3].at <= log[4].at);
    assert!(done.steps.iter().all(|s| s.start_to_log.is_none()));

    // Finished tasks are history: this one succeeded; one cancelled before it started failed.
    let other = store.create_task(blog_task()).unwrap().header.id;
    assert!(
        store.task_history(None).unwrap().len() == 1,
        "only finished tasks"
    );
    store.cancel_task(&other, None).unwrap();
    let history = store.task_history(None).unwrap();
    assert_eq!(history.len(), 2);
    let ours = history.iter().find(|e| e.id == id).unwrap();
    assert_eq!(ours.result, TaskResult::Success);
    assert_eq!(ours.metrics.steps_completed, 4);
    assert!(ours.duration_seconds.is_some());
    let stats = store.task_statistics().unwrap();
    assert_eq!(stats.total_tasks, 2);
    assert!((stats.success_rate - 0.5).abs() < 1e-9);
    assert_eq!(stats.by_result["failure"], 1);
    assert_eq!(store.task_history(Some(1)).unwrap().len(), 1);

    // Pruning keeps the newest finished task's details and the other's history only; an
    // unfinished task is never touched.
    let running = store.create_task(blog_task()).unwrap().header.id;
    assert_eq!(store.prune(1, 30).unwrap(), 1);
    let newest = &store.task_history(Some(1)).unwrap()[0].id;
    assert!(!store.get_task(newest).unwrap().steps.is_empty());
    let older = if *newest == id { &other } else { &id };
    let pruned = store.get_task(older).unwrap();
    assert!(pruned.header.pruned && pruned.steps.is_empty());
    assert!(store.task_events(older).unwrap().is_empty());
    assert_eq!(store.task_history(None).unwrap().len(), 2, "history stays");
    assert_eq!(store.get_task(&running).unwrap().steps.len(), 4);
    assert_eq!(store.prune(1, 30).unwrap(), 0, "pruned once");
    assert!(done.steps.iter().all(|s| s.status == StepStatus::Completed));
    assert_eq!(
        done.steps[0].output.as_deref(),
        Some("notes in research.md")
    );
    let value = done.to_value();
    assert_eq!(value["plan"]["goal"], "A bilingual blog post");
    assert_eq!(value["plan"]["steps"][3]["dependencies"][1], "draft-en");
    assert_eq!(
        store
            .list_tasks(Some(TaskStatus::Completed), None, None)
            .unwrap()
            .len(),
        1
    );
}

pub fn failed_steps_escalate_and_pause_their_task(store: Store) {
    let mut new = blog_task();
    new.steps[0].max_attempts = Some(2);
    let id = store.create_task(new).unwrap().header.id;
    store.start_task(&id).unwrap();
    let first = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.fail(&first, "the API timed out").unwrap();
    assert_eq!(step_status(&store, &id, "research"), StepStatus::Ready);
    let second = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    assert_eq!(
        second.handoff.id, first.handoff.id,
        "the same offer, retried"
    );
    store.fail(&second, "still timing out").unwrap();

    let task = store.get_task(&id).unwrap();
    assert_eq!(task.header.status, TaskStatus::Paused);
    assert_eq!(task.steps[0].status, StepStatus::Escalated);
    assert_eq!(task.steps[0].error.as_deref(), Some("still timing out"));
    // The dead step is its task's to retry, not an operator's `retry` of its handoff.
    let before = snapshot(&store);
    let err = store.retry(&first.handoff.id, "ops", None).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    assert!(err.to_string().contains("resolve_escalation"), "{err}");
    assert_eq!(snapshot(&store), before);
    let escalation = store.claim_next("human", None, MINUTE).unwrap().unwrap();
    assert_eq!(escalation.handoff.kind, Kind::Escalation);
    assert_eq!(escalation.handoff.unresolved_errors, ["still timing out"]);
    // Only an escalation's claim resolves; a refused resolution changes nothing.
    let other = store.create(NewHandoff::new("elsewhere", "g")).unwrap();
    let unrelated = store.claim(&other.id, "human", MINUTE).unwrap();
    let err = store
        .resolve_escalation(&unrelated, "no", true)
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "claim");
    assert_eq!(store.get(&other.id).unwrap().status, Status::Claimed);

    // Retry: a new offer, attempts reset, the task running again.
    let resolved = store
        .resolve_escalation(&escalation, "look at the proxy", true)
        .unwrap();
    assert_eq!(resolved.header.status, TaskStatus::InProgress);
    assert_eq!(
        store.get(&escalation.handoff.id).unwrap().status,
        Status::Completed
    );
    let third = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    assert_ne!(third.handoff.id, first.handoff.id, "a new offer");
    store.fail(&third, "broken").unwrap();
    let fourth = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.fail(&fourth, "broken again").unwrap();

    // Skip: the dependents go on without it.
    let again = store.claim_next("human", None, MINUTE).unwrap().unwrap();
    let skipped = store
        .resolve_escalation(&again, "go on without it", false)
        .unwrap();
    assert_eq!(skipped.steps[0].status, StepStatus::Skipped);
    assert_eq!(skipped.header.retries, 4);
    assert_eq!(skipped.header.skipped, 1);
    let mut drafts = 0;
    while store.claim_next("writer", None, MINUTE).unwrap().is_some() {
        drafts += 1;
    }
    assert_eq!(drafts, 2);
}

pub fn tasks_update_by_compare_and_swap(store: Store) {
    let task = store.create_task(blog_task()).unwrap();
    let id = task.header.id.clone();
    store.start_task(&id).unwrap();
    let research = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    let seen = store.get_task(&id).unwrap().header.version;
    store.complete(&research, "notes").unwrap();

    // The task moved since it was read: refused, naming both versions, nothing changed.
    let stale = TaskUpdate {
        goal: Some("A trilingual post".into()),
        ..TaskUpdate::default()
    };
    let before = store.get_task(&id).unwrap();
    match store.update_task(&id, seen, stale.clone()) {
        Err(Error::VersionConflict {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (seen, before.header.version)),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.get_task(&id).unwrap(), before);

    // Every problem at once, nothing written.
    let bad = TaskUpdate {
        goal: Some(" ".into()),
        add_steps: vec![
            StepSpec::new("draft-ko", "again", "writer"),
            StepSpec::new("draft-ja", "Draft (ja)", "writer").after(["nowhere"]),
        ],
        ..TaskUpdate::default()
    };
    let err = store
        .update_task(&id, before.header.version, bad)
        .unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        ["goal", "add_steps[0].id", "add_steps[1].dependencies[0]"]
    );
    assert_eq!(store.get_task(&id).unwrap(), before);

    // A step added after a done one is offered at once.
    let update = TaskUpdate {
        goal: Some("A trilingual post".into()),
        add_steps: vec![StepSpec::new("draft-ja", "Draft (ja)", "writer").after(["research"])],
        ..TaskUpdate::default()
    };
    let updated = store
        .update_task(&id, before.header.version, update)
        .unwrap();
    assert_eq!(updated.header.version, before.header.version + 1);
    assert_eq!(updated.header.goal, "A trilingual post");
    assert_eq!(updated.steps.len(), 5);
    assert_eq!(updated.steps[4].status, StepStatus::Ready);
    assert_eq!(updated.steps[0].dependents.len(), 3);
    let mut drafts = 0;
    while store.claim_next("writer", None, MINUTE).unwrap().is_some() {
        drafts += 1;
    }
    assert_eq!(drafts, 3);
}

pub fn tasks_pause_resume_and_cancel(store: Store) {
    let id = store.create_task(blog_task()).unwrap().header.id;
    assert_eq!(
        kind_of(&store.resume_task(&id).unwrap_err()),
        ErrorKind::Validation
    );
    store.start_task(&id).unwrap();
    let research = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.pause_task(&id).unwrap();
    // A claimed step may finish; what it unblocks waits for the resume.
    store.complete(&research, "notes").unwrap();
    assert!(store.claim_next("writer", None, MINUTE).unwrap().is_none());
    store.resume_task(&id).unwrap();
    let draft = store.claim_next("writer", None, MINUTE).unwrap().unwrap();
    let offered = store.get_task(&id).unwrap();
    let ready: Vec<&str> = offered
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Ready)
        .map(|s| s.spec.id.as_str())
        .collect();
    assert_eq!(ready.len(), 1);

    let cancelled = store.cancel_task(&id, Some("plan changed")).unwrap();
    assert_eq!(cancelled.header.status, TaskStatus::Cancelled);
    assert!(
        store.claim_next("writer", None, MINUTE).unwrap().is_none(),
        "withdrawn"
    );
    let withdrawn = cancelled
        .steps
        .iter()
        .find(|s| s.spec.id == ready[0])
        .unwrap();
    assert_eq!(withdrawn.status, StepStatus::Cancelled);
    let handoff = store.get(withdrawn.handoff_id.as_deref().unwrap()).unwrap();
    assert_eq!(handoff.status, Status::Cancelled);
    // The claimed draft may still finish.
    store.complete(&draft, "drafted anyway").unwrap();
    assert_eq!(
        step_status(
            &store,
            &id,
            draft.handoff.metadata["step_id"].as_str().unwrap()
        ),
        StepStatus::Completed
    );
    assert_eq!(
        store.get_task(&id).unwrap().header.status,
        TaskStatus::Cancelled
    );
    assert_eq!(
        kind_of(&store.start_task("no-such-task").unwrap_err()),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind_of(&store.task_events("no-such-task").unwrap_err()),
        ErrorKind::NotFound
    );
}

/// Seed 001 §8 steps 1–2: a task made of objectives under a readable id; agents join with a
/// role and objectives; a step without an agent is offered to the task's members only.
pub fn tasks_take_objectives_and_members(store: Store) {
    let new = NewTask {
        id: Some("fix-oauth-token-refresh".into()),
        name: "fix-oauth-token-refresh".into(),
        objectives: vec![
            "Identify root cause of token refresh failure".into(),
            "Implement fix".into(),
            "Add regression tests".into(),
        ],
        ..NewTask::default()
    };
    let task = store.create_task(new.clone()).unwrap();
    assert_eq!(task.header.id, "fix-oauth-token-refresh");
    let ids: Vec<&str> = task.steps.iter().map(|s| s.spec.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3"]);
    // The id is the caller's: taken, it is refused, and nothing changes.
    let err = store.create_task(new).unwrap_err();
    assert_eq!(err.problems()[0].field, "id");
    let bad = NewTask {
        id: Some("../x".into()),
        name: "x".into(),
        ..NewTask::default()
    };
    assert_eq!(
        store.create_task(bad).unwrap_err().problems()[0].field,
        "id"
    );
    let id = task.header.id;
    store.start_task(&id).unwrap();

    // Not a member: the objectives are not offered to it.
    assert!(
        store
            .claim_next("passer-by", None, MINUTE)
            .unwrap()
            .is_none()
    );
    let offer = store.get_task(&id).unwrap().steps[0]
        .handoff_id
        .clone()
        .unwrap();
    let err = store.claim(&offer, "passer-by", MINUTE).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition);
    assert!(err.to_string().contains("join_task"), "{err}");

    let joined = store
        .join_task(
            &id,
            "agent-investigator",
            Some("investigator"),
            &["1".into()],
        )
        .unwrap();
    let member = &joined.header.members[0];
    assert_eq!(
        member.branch,
        "task/fix-oauth-token-refresh/agent-investigator"
    );
    assert_eq!(member.role.as_deref(), Some("investigator"));
    assert_eq!(
        joined.steps[0].spec.agent.as_deref(),
        Some("agent-investigator")
    );
    // Objective 1 is its own now: offered to it alone, by a new offer.
    let own = joined.steps[0].handoff_id.clone().unwrap();
    assert_ne!(own, offer);
    assert_eq!(store.get(&offer).unwrap().status, Status::Cancelled);
    let first = store.claim(&own, "agent-investigator", MINUTE).unwrap();
    assert_eq!(first.handoff.metadata["step_id"], "1");
    assert_eq!(
        first.handoff.to_agent.as_deref(),
        Some("agent-investigator")
    );
    // Another member takes the objectives nobody was assigned.
    store.join_task(&id, "agent-tester", None, &[]).unwrap();
    let other = store
        .claim_next("agent-tester", None, MINUTE)
        .unwrap()
        .unwrap();
    let taken = other.handoff.metadata["step_id"].as_str().unwrap();
    assert!(["2", "3"].contains(&taken), "{taken}");
    // Assigned to someone else, or unknown: refused, naming the objective.
    let err = store
        .join_task(&id, "agent-late", None, &["1".into()])
        .unwrap_err();
    assert!(err.to_string().contains("agent-investigator"), "{err}");
    let err = store
        .join_task(&id, "agent-late", None, &["9".into()])
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "objectives[0]");
    assert_eq!(store.get_task(&id).unwrap().header.members.len(), 2);

    let events = store.task_events(&id).unwrap();
    let joins: Vec<_> = events
        .iter()
        .filter(|e| e.change.kind() == "agent_join")
        .collect();
    assert_eq!(joins.len(), 2);
    let replay = store.replay(&id, false).unwrap();
    let entry = replay
        .timeline
        .iter()
        .find(|e| e.kind == "task.agent_join")
        .unwrap();
    assert_eq!(entry.agent.as_deref(), Some("agent-investigator"));
    let investigator = replay
        .agents
        .iter()
        .find(|a| a.agent == "agent-investigator")
        .unwrap();
    assert_eq!(investigator.role.as_deref(), Some("investigator"));
}

/// A step's holder hands it on as an escalation linked to the step; whatever settles a
/// step's escalation leaves the task in a defined state; a paused task's offers cannot be
/// claimed.
pub fn step_escalations_never_strand_a_task(store: Store) {
    // escalate_step: the expert's completion completes the step.
    let id = store.create_task(blog_task()).unwrap().header.id;
    store.start_task(&id).unwrap();
    let research = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    let escalation = store
        .escalate_step(
            &research,
            "oauth-expert",
            Some("Found it in token_service.py:142; needs OAuth2 expertise"),
            &["Unclear OAuth2 state transition after refresh failure".into()],
            &["1".into(), "2".into()],
        )
        .unwrap();
    assert_eq!(escalation.kind, Kind::Escalation);
    assert_eq!(escalation.from_agent.as_deref(), Some("researcher"));
    assert_eq!(
        escalation.parent_id.as_deref(),
        Some(research.handoff.id.as_str())
    );
    assert_eq!(escalation.blockers.len(), 1);
    assert_eq!(
        store.get(&research.handoff.id).unwrap().status,
        Status::Completed
    );
    assert_eq!(step_status(&store, &id, "research"), StepStatus::Ready);
    let expert = store
        .claim_next("oauth-expert", None, MINUTE)
        .unwrap()
        .unwrap();
    assert_eq!(expert.handoff.id, escalation.id);
    assert_eq!(step_status(&store, &id, "research"), StepStatus::InProgress);
    let packet = store
        .context_for(&escalation.id, crate::store::ContextOptions::default())
        .unwrap();
    let markdown = packet.to_markdown();
    assert!(markdown.contains("token_service.py:142"), "{markdown}");
    store.complete(&expert, "fixed the refresh").unwrap();
    let task = store.get_task(&id).unwrap();
    assert_eq!(task.steps[0].status, StepStatus::Completed);
    assert_eq!(task.steps[0].output.as_deref(), Some("fixed the refresh"));
    assert!(store.task_events(&id).unwrap().iter().any(|e| e.change
        == TaskChange::StepEscalated {
            step: "research".into(),
            to: Some("oauth-expert".into())
        }));
    // A handoff that carries no step cannot be handed on as one.
    let plain = store.create(NewHandoff::new("elsewhere", "g")).unwrap();
    let held = store.claim(&plain.id, "someone", MINUTE).unwrap();
    let err = store.escalate_step(&held, "x", None, &[], &[]).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition);

    // A failed step's escalation settled by a plain complete: the step is skipped and the
    // task goes on, never paused for good.
    let mut new = blog_task();
    new.steps[0].max_attempts = Some(1);
    let id = store.create_task(new).unwrap().header.id;
    store.start_task(&id).unwrap();
    let first = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.fail(&first, "the API timed out").unwrap();
    assert_eq!(
        store.get_task(&id).unwrap().header.status,
        TaskStatus::Paused
    );
    let err = store.resume_task(&id).unwrap_err();
    assert!(err.to_string().contains("resolve_escalation"), "{err}");
    let human = store.claim_next("human", None, MINUTE).unwrap().unwrap();
    store.complete(&human, "done by hand").unwrap();
    let task = store.get_task(&id).unwrap();
    assert_eq!(task.header.status, TaskStatus::InProgress);
    assert_eq!(task.steps[0].status, StepStatus::Skipped);
    assert!(store.claim_next("writer", None, MINUTE).unwrap().is_some());

    // Failed plainly: the task fails, with the reason, and nothing is left on offer.
    let mut new = blog_task();
    new.steps[0].max_attempts = Some(1);
    let id = store.create_task(new).unwrap().header.id;
    store.start_task(&id).unwrap();
    let first = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.fail(&first, "broken").unwrap();
    let human = store.claim_next("human", None, MINUTE).unwrap().unwrap();
    store.fail(&human, "cannot decide").unwrap();
    let task = store.get_task(&id).unwrap();
    assert_eq!(task.header.status, TaskStatus::Failed);
    assert!(task.header.failure.unwrap().contains("cannot decide"));
    assert_eq!(
        store.task_history(None).unwrap()[0].result,
        crate::task::TaskResult::Failure
    );

    // Two steps escalated: the task a refused escalation fails withdraws the other's.
    let mut a = StepSpec::new("a", "A", "x");
    a.max_attempts = Some(1);
    let mut b = StepSpec::new("b", "B", "y");
    b.max_attempts = Some(1);
    let two = NewTask {
        name: "two".into(),
        steps: vec![a, b],
        ..NewTask::default()
    };
    let id = store.create_task(two).unwrap().header.id;
    store.start_task(&id).unwrap();
    // Both held before either fails (a failure pauses the task, withdrawing open offers).
    let held: Vec<_> = ["x", "y"]
        .map(|agent| store.claim_next(agent, None, MINUTE).unwrap().unwrap())
        .into_iter()
        .collect();
    for claim in &held {
        store.fail(claim, "broken").unwrap();
    }
    let other = store.get_task(&id).unwrap().steps[1]
        .escalation_id
        .clone()
        .unwrap();
    let first = store.claim_next("human", None, MINUTE).unwrap().unwrap();
    assert_ne!(first.handoff.id, other);
    store.fail(&first, "cannot decide").unwrap();
    assert_eq!(
        store.get_task(&id).unwrap().header.status,
        TaskStatus::Failed
    );
    assert_eq!(store.get(&other).unwrap().status, Status::Cancelled);

    // fail_task ends a task by hand; an empty reason is refused.
    let id = store.create_task(blog_task()).unwrap().header.id;
    store.start_task(&id).unwrap();
    assert_eq!(
        store.fail_task(&id, " ").unwrap_err().problems()[0].field,
        "reason"
    );
    let failed = store.fail_task(&id, "requirements changed").unwrap();
    assert_eq!(failed.header.status, TaskStatus::Failed);
    assert!(
        store
            .claim_next("researcher", None, MINUTE)
            .unwrap()
            .is_none()
    );

    // Paused: what was offered and nobody holds cannot be claimed until it resumes.
    let id = store.create_task(blog_task()).unwrap().header.id;
    store.start_task(&id).unwrap();
    store.pause_task(&id).unwrap();
    assert!(
        store
            .claim_next("researcher", None, MINUTE)
            .unwrap()
            .is_none()
    );
    store.resume_task(&id).unwrap();
    assert!(
        store
            .claim_next("researcher", None, MINUTE)
            .unwrap()
            .is_some()
    );
}

/// Seed 001 §8 step 7: completing a task with `merge_to_main` moves only the verified facts
/// and the verified or cherry-picked conversations of every branch of the task to `main`.
pub fn completing_a_task_merges_only_what_was_verified(store: Store) {
    use crate::curation::{FactStatus, Score, Thresholds, Verifier, VerifyItem};
    use crate::store::NewConversation;

    struct ByText;
    impl Verifier for ByText {
        fn name(&self) -> &str {
            "by-text"
        }
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            let score = match item {
                VerifyItem::Fact(f) if f.text.contains("backoff") => 0.9,
                VerifyItem::Fact(_) => 0.5,
                VerifyItem::Conversation(..) => 0.5,
            };
            Ok(Score {
                score,
                explanation: None,
            })
        }
    }
    let new = NewTask {
        id: Some("fix-oauth".into()),
        name: "fix-oauth".into(),
        objectives: vec!["Fix it".into()],
        ..NewTask::default()
    };
    let id = store.create_task(new).unwrap().header.id;
    store.start_task(&id).unwrap();
    store
        .join_task(&id, "agent-b", Some("expert"), &[])
        .unwrap();
    let agent = "task/fix-oauth/agent-b";
    store
        .add_facts(
            agent,
            vec![
                plain_fact("Refresh needs retry with exponential backoff"),
                plain_fact("Maybe the clock is skewed"),
            ],
        )
        .unwrap();
    let conversation = store
        .add_conversation(NewConversation {
            branch: agent.into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .cherry_pick(&conversation.id, "task/fix-oauth", Some(5), Some(9), None)
        .unwrap();
    store
        .verify(agent, Some(&mut ByText), &Thresholds::default())
        .unwrap();

    // A step a worker holds refuses the completion, and nothing changes.
    let held = store.claim_next("agent-b", None, MINUTE).unwrap().unwrap();
    let err = store.complete_task(&id, Some("x"), true).unwrap_err();
    assert!(err.to_string().contains("held"), "{err}");
    assert!(store.facts("main", None).unwrap().is_empty());
    store.release(&held, "later").unwrap();

    let done = store
        .complete_task(&id, Some("Fixed OAuth2 token refresh with retry"), true)
        .unwrap();
    assert_eq!(done.header.status, TaskStatus::Completed);
    assert_eq!(
        done.header.result_summary.as_deref(),
        Some("Fixed OAuth2 token refresh with retry")
    );
    assert_eq!(done.steps[0].status, StepStatus::Skipped);
    let main = store.facts("main", None).unwrap();
    let texts: Vec<&str> = main.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["Refresh needs retry with exponential backoff"]);
    let on_main = store.list_conversations(Some("main"), None).unwrap();
    assert_eq!(on_main.len(), 1, "the cherry-picked conversation only");
    // The unverified fact stays on the agent's branch.
    let kept = store.facts(agent, None).unwrap();
    assert!(
        kept.iter()
            .any(|f| f.text.starts_with("Maybe") && f.status != FactStatus::Promoted)
    );
    let merge = store
        .task_events(&id)
        .unwrap()
        .into_iter()
        .find(|e| e.change.kind() == "merge")
        .unwrap();
    assert_eq!(
        merge.change,
        TaskChange::Merge {
            into: "main".into(),
            facts: 1,
            conversations: 1
        }
    );
    assert_eq!(
        store.task_history(None).unwrap()[0].summary,
        "Fixed OAuth2 token refresh with retry"
    );
    // Failed or cancelled tasks cannot be completed.
    let other = store.create_task(blog_task()).unwrap().header.id;
    store.cancel_task(&other, None).unwrap();
    assert!(store.complete_task(&other, None, false).is_err());
}

/// A task runs again with other agents or instructions, seeded with the first run's verified
/// knowledge, and the two runs compare side by side.
pub fn tasks_run_again_seeded_with_what_they_learned(store: Store) {
    use crate::curation::{Score, Thresholds, Verifier, VerifyItem};
    use crate::store::Rerun;

    struct Everything;
    impl Verifier for Everything {
        fn name(&self) -> &str {
            "everything"
        }
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 0.9,
                explanation: None,
            })
        }
    }
    let mut new = blog_task();
    new.id = Some("blog-1".into());
    let first = store.create_task(new).unwrap().header.id;
    store
        .add_facts("task/blog-1", vec![plain_fact("Readers want Korean first")])
        .unwrap();
    store
        .verify("task/blog-1", Some(&mut Everything), &Thresholds::default())
        .unwrap();

    // An override that names nothing in the plan is refused, and nothing is written.
    let bad = Rerun {
        task_id: Some(first.clone()),
        agents: [("nobody".to_owned(), "x".to_owned())].into(),
        instructions: [("nowhere".to_owned(), "x".to_owned())].into(),
        ..Rerun::default()
    };
    let err = store.rerun_task(bad).unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["agents.nobody", "instructions.nowhere"]);
    assert_eq!(store.list_tasks(None, None, None).unwrap().len(), 1);
    assert!(store.list_bundles(None).unwrap().is_empty());

    let again = store
        .rerun_task(Rerun {
            task_id: Some(first.clone()),
            id: Some("blog-2".into()),
            agents: [("writer".to_owned(), "writer-v2".to_owned())].into(),
            instructions: [("review".to_owned(), "Check the tone".to_owned())].into(),
            context: Some(
                [("model".to_owned(), serde_json::json!("other-model"))]
                    .into_iter()
                    .collect(),
            ),
            ..Rerun::default()
        })
        .unwrap();
    assert_eq!(again.header.id, "blog-2");
    assert_eq!(again.header.metadata["rerun_of"], "blog-1");
    assert_eq!(again.header.context["model"], "other-model");
    let agents: Vec<Option<&str>> = again
        .steps
        .iter()
        .map(|s| s.spec.agent.as_deref())
        .collect();
    assert_eq!(
        agents,
        [
            Some("researcher"),
            Some("writer-v2"),
            Some("writer-v2"),
            Some("reviewer")
        ]
    );
    assert_eq!(
        again.steps[3].spec.instructions.as_deref(),
        Some("Check the tone")
    );
    let seeded = store.facts("task/blog-2", None).unwrap();
    assert_eq!(seeded.len(), 1);
    assert_eq!(seeded[0].text, "Readers want Korean first");
    // By the bundle: the same plan, the bundle's knowledge.
    let bundle = store.list_bundles(None).unwrap().remove(0);
    let third = store
        .rerun_task(Rerun {
            bundle_id: Some(bundle.id),
            ..Rerun::default()
        })
        .unwrap();
    assert_eq!(third.steps.len(), 4);
    assert_eq!(
        store
            .facts(&format!("task/{}", third.header.id), None)
            .unwrap()
            .len(),
        1
    );
    store.compare(&first, "blog-2").unwrap();
}
