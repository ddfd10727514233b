//! The backend conformance suite: one set of behaviours every [`Backend`](super::Backend) must
//! show, written once and run by each backend's tests through [`conformance_tests!`].
//!
//! Out-of-tree backends enable the `testing` feature and invoke the macro with an expression
//! that makes a fresh, empty [`Store`] on their backend.
#![allow(clippy::unwrap_used, missing_docs)] // Test code: a failed unwrap is a failed test.

use std::sync::Arc;
use std::time::Duration;

use crate::chain::{ChainPolicy, ChainRule};
use crate::clock::ManualClock;
use crate::error::{Error, ErrorKind};
use crate::machine::{Change, Event, replay};
use crate::plan::StepSpec;
use crate::record::{Handoff, Kind, NewHandoff, Reason, Status};
use crate::store::{ClaimRef, ClaimSecret, Doc, EventFilter, ListFilter, Store};
use crate::task::{NewTask, StepStatus, TaskChange, TaskResult, TaskStatus, TaskUpdate};

const MINUTE: Duration = Duration::from_secs(60);

/// Generates one `#[test]` per conformance case, each on a store made by `$make`.
#[macro_export]
macro_rules! conformance_tests {
    // `optional EXPR`: EXPR is an `Option` of a fixture; `None` skips the case (a backend whose
    // server is not configured on this machine).
    (optional $make:expr) => {
        $crate::conformance_tests!(@cases (optional $make);
            create_and_get, idempotent_create, claim_is_exclusive, addressed_handoffs,
            heartbeat_release_and_reclaim, terminal_states_accept_nothing, fencing,
            lapses_fail_after_max_attempts, pending_expiry, reject_and_cancel,
            claim_next_order_and_filters, claim_next_reclaims_lapsed_leases,
            lapsed_leases_go_before_newer_work, chain_and_policy,
            checkpoints_and_stalled, list_filters, events_replay_to_records,
            bad_ids_change_nothing, create_many_is_atomic, unknown_parent, path_stats,
            limits_count_paths_not_tasks, open_handoffs_obey_the_policy_at_claim,
            display_names_are_agent_names, events_are_paged, lists_are_paged, claims_need_their_secret,
            cancel_rights, waiting_workers_get_new_work, failures_are_retried_then_final,
            documents_are_kept_by_kind_and_key, tasks_run_their_plans_as_handoffs,
            failed_steps_escalate_and_pause_their_task, tasks_pause_resume_and_cancel,
            tasks_update_by_compare_and_swap, memory_is_versioned_by_scope,
            sessions_say_who_owns_a_conversation, protocol_runs_answer_each_message_once,
            lost_protocol_messages_escalate_their_run, curated_knowledge_moves_up_once_verified,
            bundles_share_verified_knowledge_and_import_once,
            replays_tell_a_task_in_order_and_compare_runs, judges_texts_are_held_to_the_limits,
            successors_receive_what_their_predecessors_knew, a_plan_steps_successor_reads_its_dependencies,
            knowledge_on_main_reaches_new_tasks_by_relevance, packets_fit_a_character_budget,
            bundles_follow_provenance_after_a_merge, cherry_picks_can_pass_the_gate,
            bundles_record_their_verification, conversations_become_candidate_facts,
            prune_removes_old_tasks_handoffs_and_keeps_their_history,
            backups_restore_into_any_store, damaged_backups_are_refused_and_write_nothing,
            tasks_take_objectives_and_members, step_escalations_never_strand_a_task,
            completing_a_task_merges_only_what_was_verified,
            tasks_run_again_seeded_with_what_they_learned,
        );
    };
    ($make:expr) => {
        $crate::conformance_tests!(optional Some($make));
    };
    (@cases (optional $make:expr); $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                // Kept alive for the whole case: it may own the store's files.
                let Some(fixture) = $make else { return };
                $crate::store::conformance::$case($crate::store::conformance::Fixture::store(&fixture));
            }
        )+
    };
}

/// What a conformance case runs on: a store, and whatever must outlive it (a temp folder).
pub trait Fixture {
    /// The store under test.
    fn store(&self) -> Store;
}

impl Fixture for Store {
    fn store(&self) -> Store {
        self.clone()
    }
}

impl<T> Fixture for (Store, T) {
    fn store(&self) -> Store {
        self.0.clone()
    }
}

/// A store on a manual clock, for deterministic time.
fn timed(store: Store) -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_epoch());
    (store.with_clock(clock.clone()), clock)
}

/// Everything a store holds, to prove that a refused call changed nothing.
fn snapshot(store: &Store) -> (Vec<Handoff>, Vec<Event>) {
    (
        store.list(&ListFilter::default()).unwrap(),
        store.events(None).unwrap(),
    )
}

fn rich(task: &str) -> NewHandoff {
    let mut metadata = crate::Metadata::new();
    metadata.insert(
        "nested".into(),
        serde_json::json!({"list": [1, 2.5, null, true, "x"], "z": {"a": {}}, "a": -3}),
    );
    NewHandoff::new(task, "Finish the migration")
        .from_agent("claude")
        .to_agent("gemini")
        .session_id("sess-1")
        .reason(Reason::ContextLimit { percent: 85 })
        .context_usage(85)
        .progress("Schema done, data half moved.")
        .completed(["schema", "copy users"])
        .pending(["copy orders", "verify counts"])
        .decisions(["keep ids stable"])
        .assumptions(["no writes during the move"])
        .warnings(["orders table is large"])
        .errors(["timeout on batch 7"])
        .blockers(["waiting for a maintenance window"])
        .files(["migrate.sql"])
        .instructions("Resume at batch 7 with smaller batches.")
        .metadata(metadata)
}

fn kind_of(err: &Error) -> ErrorKind {
    err.kind()
}

pub fn create_and_get(store: Store) {
    let created = store.create(rich("t1")).unwrap();
    assert_eq!(created.status, Status::Pending);
    assert_eq!(created.attempts, 0);
    assert_eq!(store.get(&created.id).unwrap(), created);
    let events = store.events(Some(&created.id)).unwrap();
    assert_eq!(events.len(), 1);
    // The event routes the work; the record holds what was created.
    assert_eq!(
        events[0].change,
        Change::Created {
            task_id: "t1".into(),
            to_agent: created.to_agent.clone()
        }
    );
    assert_eq!(events[0].actor.as_deref(), Some("claude"));
    assert_eq!(
        kind_of(&store.get("missing").unwrap_err()),
        ErrorKind::NotFound
    );
}

pub fn idempotent_create(store: Store) {
    let first = store.create(rich("t1").id("job-1")).unwrap();
    let again = store.create(rich("t1").id("job-1")).unwrap();
    assert_eq!(first, again);
    let before = snapshot(&store);
    let err = store
        .create(rich("t1").id("job-1").progress("other"))
        .unwrap_err();
    assert!(
        matches!(err, Error::Conflict { ref id } if id == "job-1"),
        "{err}"
    );
    assert_eq!(snapshot(&store), before);
    assert_eq!(store.events(Some("job-1")).unwrap().len(), 1);
}

pub fn claim_is_exclusive(store: Store) {
    let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
    let claim = store.claim(&h.id, "a1", MINUTE).unwrap();
    assert_eq!(claim.token, 1);
    assert_eq!(claim.handoff.status, Status::Claimed);
    assert_eq!(claim.handoff.claimed_by.as_deref(), Some("a1"));
    let err = store.claim(&h.id, "a2", MINUTE).unwrap_err();
    assert!(
        matches!(err, Error::AlreadyClaimed { ref holder, .. } if holder == "a1"),
        "{err}"
    );
    assert!(store.claim_next("a2", None, MINUTE).unwrap().is_none());
}

pub fn addressed_handoffs(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "goal").to_agent("gemini"))
        .unwrap();
    let err = store.claim(&h.id, "codex", MINUTE).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    assert!(store.claim_next("codex", None, MINUTE).unwrap().is_none());
    let claim = store.claim_next("gemini", None, MINUTE).unwrap().unwrap();
    assert_eq!(claim.handoff.id, h.id);
}

pub fn heartbeat_release_and_reclaim(store: Store) {
    let (store, clock) = timed(store);
    let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
    let claim = store.claim(&h.id, "a1", MINUTE).unwrap();
    clock.advance(Duration::from_secs(50));
    let beat = store.heartbeat(&claim).unwrap();
    assert_eq!(
        beat.lease_until,
        Some(store.now() + chrono::TimeDelta::seconds(60))
    );
    assert_eq!(beat.heartbeat_at, Some(store.now()));
    clock.advance(Duration::from_secs(50));
    // Still alive thanks to the heartbeat.
    assert_eq!(store.heartbeat(&claim).unwrap().status, Status::Claimed);
    let released = store.release(&claim, "need a bigger model").unwrap();
    assert_eq!(released.status, Status::Pending);
    assert_eq!(released.attempts, 1);
    assert_eq!(released.lease_until, None);
    let second = store.claim(&h.id, "a2", MINUTE).unwrap();
    assert_eq!(second.token, 2);
    let done = store.complete(&second, "shipped").unwrap();
    assert_eq!(done.status, Status::Completed);
    assert_eq!(done.outcome.as_deref(), Some("shipped"));
    assert_eq!(done.completed_at, Some(store.now()));
}

pub fn terminal_states_accept_nothing(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "goal").to_agent("a1"))
        .unwrap();
    let claim = store.claim(&h.id, "a1", MINUTE).unwrap();
    store.complete(&claim, "done").unwrap();
    let before = snapshot(&store);
    let refusals = [
        store.claim(&h.id, "a1", MINUTE).unwrap_err(),
        store.heartbeat(&claim).unwrap_err(),
        store.release(&claim, "r").unwrap_err(),
        store.complete(&claim, "again").unwrap_err(),
        store.reject(&h.id, "a1", "no").unwrap_err(),
        store.cancel(&h.id, "boss", None).unwrap_err(),
    ];
    let kinds: Vec<ErrorKind> = refusals.iter().map(kind_of).collect();
    use ErrorKind::{InvalidTransition as IT, LeaseLost as LL};
    assert_eq!(kinds, [IT, LL, LL, LL, IT, IT]);
    assert_eq!(snapshot(&store), before);
}

pub fn fencing(store: Store) {
    let (store, clock) = timed(store);
    let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
    let a = store.claim(&h.id, "agent-a", MINUTE).unwrap();
    clock.advance(Duration::from_secs(61));
    let b = store.claim(&h.id, "agent-b", MINUTE).unwrap();
    assert!(b.token > a.token);
    let before = snapshot(&store);
    for err in [
        store.heartbeat(&a).unwrap_err(),
        store.release(&a, "late").unwrap_err(),
        store.complete(&a, "late").unwrap_err(),
    ] {
        assert!(
            matches!(err, Error::LeaseLost { token, .. } if token == a.token),
            "{err}"
        );
    }
    assert_eq!(snapshot(&store), before);
    assert_eq!(
        store.get(&h.id).unwrap().claimed_by.as_deref(),
        Some("agent-b")
    );
    // The lapse was recorded, then B's claim.
    let kinds: Vec<&str> = store
        .events(Some(&h.id))
        .unwrap()
        .iter()
        .map(|e| e.change.kind())
        .collect();
    assert_eq!(kinds, ["created", "claimed", "lease_expired", "claimed"]);
}

pub fn lapses_fail_after_max_attempts(store: Store) {
    let (store, clock) = timed(store);
    let h = store
        .create(NewHandoff::new("t1", "goal").max_attempts(2))
        .unwrap();
    store.claim(&h.id, "a1", MINUTE).unwrap();
    clock.advance(Duration::from_secs(61));
    assert_eq!(store.reap().unwrap(), 1);
    let lapsed = store.get(&h.id).unwrap();
    assert_eq!((lapsed.status, lapsed.attempts), (Status::Pending, 1));
    store.claim(&h.id, "a2", MINUTE).unwrap();
    clock.advance(Duration::from_secs(61));
    let err = store.claim(&h.id, "a3", MINUTE).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    // The refused claim rolled back the lapse it observed; reaping records it.
    assert_eq!(store.get(&h.id).unwrap().status, Status::Claimed);
    assert_eq!(store.reap().unwrap(), 1);
    let failed = store.get(&h.id).unwrap();
    assert_eq!((failed.status, failed.attempts), (Status::Failed, 2));
    assert!(failed.completed_at.is_some());
    assert_eq!(store.reap().unwrap(), 0);
}

pub fn failures_are_retried_then_final(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "goal").max_attempts(2))
        .unwrap();
    let first = store.claim(&h.id, "a1", MINUTE).unwrap();
    let before = snapshot(&store);
    for bad in ["", "   "] {
        let err = store.fail(&first, bad).unwrap_err();
        assert_eq!(err.problems()[0].field, "error", "{err}");
    }
    let forged = ClaimRef {
        secret: ClaimSecret::generate().unwrap(),
        ..ClaimRef::from(&first)
    };
    assert_eq!(
        kind_of(&store.fail(&forged, "x").unwrap_err()),
        ErrorKind::LeaseLost
    );
    assert_eq!(snapshot(&store), before, "refused failures change nothing");

    let retried = store.fail(&first, "the API timed out").unwrap();
    assert_eq!((retried.status, retried.attempts), (Status::Pending, 1));
    assert_eq!(
        kind_of(&store.fail(&first, "again").unwrap_err()),
        ErrorKind::LeaseLost,
        "a failed claim is over"
    );
    let second = store.claim_next("a2", None, MINUTE).unwrap().unwrap();
    let failed = store.fail(&second, "still timing out").unwrap();
    assert_eq!((failed.status, failed.attempts), (Status::Failed, 2));
    assert_eq!(failed.outcome.as_deref(), Some("still timing out"));
    assert!(failed.completed_at.is_some());
    assert!(store.claim_next("a3", None, MINUTE).unwrap().is_none());

    let log = store.events(Some(&h.id)).unwrap();
    let kinds: Vec<&str> = log.iter().map(|e| e.change.kind()).collect();
    assert_eq!(
        kinds,
        ["created", "claimed", "attempt_failed", "claimed", "failed"]
    );
    assert_eq!(log[2].actor.as_deref(), Some("a1"));
    assert!(matches!(
        &log[4].change,
        Change::Failed { error: Some(e), .. } if e == "still timing out"
    ));
    assert_eq!(replay(&failed, &log).as_ref(), Some(&failed));
}

pub fn documents_are_kept_by_kind_and_key(store: Store) {
    let backend = store.backend();
    let doc = |version: u64, body: &str| Doc {
        version,
        body: body.to_owned(),
    };
    backend
        .write(&mut |tx| {
            assert_eq!(tx.doc("task", "t1")?, None);
            tx.insert_doc("task", "t1", &doc(1, r#"{"name":"a"}"#))?;
            for step in ["t1/b", "t1/a", "t10/a", "t2/a"] {
                tx.insert_doc("step", step, &doc(1, r#"{"step":true}"#))?;
            }
            // A transaction sees its own writes.
            assert_eq!(tx.doc("task", "t1")?, Some(doc(1, r#"{"name":"a"}"#)));
            let keys: Vec<String> = tx
                .docs("step", "t1/")?
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            assert_eq!(keys, ["t1/a", "t1/b"]);
            // Several at once, in the order asked, a missing one as `None`; an update of a
            // document inserted in the same transaction is what is then read.
            tx.update_doc("step", "t2/a", &doc(2, r#"{"step":false}"#))?;
            let read = tx.docs_at(&[("step", "t2/a"), ("step", "t3/a"), ("task", "t1")])?;
            assert_eq!(
                read,
                [
                    Some(doc(2, r#"{"step":false}"#)),
                    None,
                    Some(doc(1, r#"{"name":"a"}"#))
                ]
            );
            assert_eq!(tx.docs_at(&[])?, []);
            // A look that locks nothing still sees the transaction's own writes.
            assert_eq!(
                tx.peek_doc("step", "t2/a")?,
                Some(doc(2, r#"{"step":false}"#))
            );
            assert_eq!(tx.peek_doc("step", "t3/a")?, None);
            Ok(())
        })
        .unwrap();
    assert_eq!(backend.doc("task", "t1").unwrap().unwrap().version, 1);
    assert_eq!(backend.doc("step", "t2/a").unwrap().unwrap().version, 2);
    assert_eq!(backend.doc("step", "t1").unwrap(), None, "kinds are apart");

    let keys = |prefix: &str, after: Option<&str>, limit: usize| -> Vec<String> {
        backend
            .docs("step", prefix, after, limit)
            .unwrap()
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    };
    assert_eq!(keys("t1/", None, 10), ["t1/a", "t1/b"]);
    assert_eq!(keys("t1", None, 10), ["t1/a", "t1/b", "t10/a"]);
    assert_eq!(keys("", Some("t1/a"), 2), ["t1/b", "t10/a"]);
    assert_eq!(keys("t1/", Some("t1/b"), 10), Vec::<String>::new());

    // A failed write leaves every document as it was.
    let err = backend
        .write(&mut |tx| {
            tx.update_doc("task", "t1", &doc(2, r#"{"name":"b"}"#))?;
            tx.insert_doc("task", "t3", &doc(1, "{}"))?;
            Err(Error::storage("refused"))
        })
        .unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::Storage);
    assert_eq!(backend.doc("task", "t1").unwrap().unwrap().version, 1);
    assert_eq!(backend.doc("task", "t3").unwrap(), None);

    backend
        .write(&mut |tx| {
            let current = tx.doc("task", "t1")?.unwrap();
            tx.update_doc("task", "t1", &doc(current.version + 1, r#"{"name":"b"}"#))
        })
        .unwrap();
    assert_eq!(
        backend.doc("task", "t1").unwrap(),
        Some(doc(2, r#"{"name":"b"}"#))
    );
}

fn blog_task() -> NewTask {
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

pub fn memory_is_versioned_by_scope(store: Store) {
    let value = |n: i64| {
        let mut map = crate::record::Metadata::new();
        map.insert("count".into(), serde_json::json!(n));
        map
    };
    assert_eq!(store.memory_get("agent:writer").unwrap(), None);
    let first = store.memory_put("agent:writer", value(1), Some(0)).unwrap();
    assert_eq!(first.version, 1);
    match store.memory_put("agent:writer", value(9), Some(0)) {
        Err(Error::VersionConflict {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (0, 1)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.memory_get("agent:writer").unwrap(),
        Some(first.clone())
    );
    let err = store.memory_put("../x", value(1), None).unwrap_err();
    assert_eq!(err.problems()[0].field, "scope");

    // A failing change writes nothing and comes back as it was.
    let failed: std::result::Result<_, Error> =
        store.memory_update("agent:writer", |_| Err(Error::invalid("mine", "no")));
    assert_eq!(failed.unwrap_err().problems()[0].field, "mine");
    assert_eq!(
        store.memory_get("agent:writer").unwrap().unwrap().version,
        1
    );

    // Concurrent increments: none lost.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let store = store.clone();
            scope.spawn(move || {
                for _ in 0..25 {
                    store
                        .memory_update("shared", |mut v| {
                            let n = v.get("count").and_then(|c| c.as_i64()).unwrap_or(0);
                            v.insert("count".into(), serde_json::json!(n + 1));
                            Ok::<_, Error>(v)
                        })
                        .unwrap();
                }
            });
        }
    });
    let shared = store.memory_get("shared").unwrap().unwrap();
    assert_eq!(shared.value["count"], 100);
    assert_eq!(shared.version, 100);

    store.memory_put("session:s1", value(1), None).unwrap();
    let scopes: Vec<String> = store
        .memory_list(None)
        .unwrap()
        .into_iter()
        .map(|m| m.scope)
        .collect();
    assert_eq!(scopes, ["agent:writer", "session:s1", "shared"]);
    assert_eq!(store.memory_list(Some("session:")).unwrap().len(), 1);
    assert!(store.memory_delete("session:s1", Some(7)).is_err());
    assert!(store.memory_delete("session:s1", Some(1)).unwrap());
    assert!(!store.memory_delete("session:s1", None).unwrap());
    assert_eq!(store.memory_get("session:s1").unwrap(), None);
    assert_eq!(store.memory_list(Some("session:")).unwrap(), []);
    // A writer that read version 1 before the delete does not overwrite what comes after it.
    let again = store.memory_put("session:s1", value(2), Some(0)).unwrap();
    assert_eq!(again.version, 3, "versions go on after a delete");
    assert!(store.memory_put("session:s1", value(3), Some(1)).is_err());
}

pub fn sessions_say_who_owns_a_conversation(store: Store) {
    let empty = store.session("s1").unwrap();
    assert_eq!((empty.current_agent, empty.handoff_chain.len()), (None, 0));
    let first = store
        .create(
            NewHandoff::new("t1", "triage")
                .from_agent("triage")
                .to_agent("billing")
                .session_id("s1"),
        )
        .unwrap();
    store
        .create(NewHandoff::new("t9", "elsewhere").session_id("s2"))
        .unwrap();
    // Handed over but not taken yet: still the sender's.
    assert_eq!(
        store.session("s1").unwrap().current_agent.as_deref(),
        Some("triage")
    );
    let claim = store.claim(&first.id, "billing", MINUTE).unwrap();
    assert_eq!(
        store.session("s1").unwrap().current_agent.as_deref(),
        Some("billing")
    );
    store.complete(&claim, "refunded").unwrap();
    let mut context = crate::record::Metadata::new();
    context.insert("customer".into(), serde_json::json!("c-42"));
    store.memory_put("session:s1", context, None).unwrap();

    let session = store.session("s1").unwrap();
    assert_eq!(session.current_agent.as_deref(), Some("billing"));
    assert_eq!(session.handoff_chain.len(), 1);
    assert_eq!(
        session.handoff_chain[0].to_agent.as_deref(),
        Some("billing")
    );
    assert_eq!(session.context["customer"], "c-42");
    assert_eq!(
        store.session("bad session").unwrap_err().problems()[0].field,
        "session_id"
    );
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

pub fn pending_expiry(store: Store) {
    let (store, clock) = timed(store);
    let expires = store.now() + chrono::TimeDelta::seconds(30);
    let h = store
        .create(NewHandoff::new("t1", "goal").expires_at(expires))
        .unwrap();
    clock.advance(Duration::from_secs(30));
    assert!(store.claim_next("a1", None, MINUTE).unwrap().is_none());
    let expired = store.get(&h.id).unwrap();
    assert_eq!(expired.status, Status::Expired);
    assert_eq!(expired.completed_at, Some(expires));
    let last = store.events(Some(&h.id)).unwrap().pop().unwrap();
    assert_eq!((last.change, last.actor), (Change::Expired, None));
}

pub fn reject_and_cancel(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "goal").to_agent("gemini"))
        .unwrap();
    let before = snapshot(&store);
    let err = store.reject(&h.id, "codex", "not mine").unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    assert_eq!(snapshot(&store), before);
    let rejected = store.reject(&h.id, "gemini", "out of scope").unwrap();
    assert_eq!(rejected.status, Status::Rejected);
    assert_eq!(rejected.outcome.as_deref(), Some("out of scope"));

    let open = store.create(NewHandoff::new("t2", "goal")).unwrap();
    let err = store.reject(&open.id, "anyone", "no").unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    let claim = store.claim(&open.id, "a1", MINUTE).unwrap();
    let cancelled = store
        .cancel(&open.id, "boss", Some("plan changed"))
        .unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
    assert_eq!(
        kind_of(&store.complete(&claim, "x").unwrap_err()),
        ErrorKind::LeaseLost
    );
}

pub fn claim_next_order_and_filters(store: Store) {
    let (store, clock) = timed(store);
    let mut ids = Vec::new();
    for (task, to) in [
        ("t1", None),
        ("t2", Some("b")),
        ("t3", None),
        ("t4", Some("a")),
    ] {
        let mut new = NewHandoff::new(task, "goal");
        new.to_agent = to.map(str::to_owned);
        ids.push(store.create(new).unwrap().id);
        clock.advance(Duration::from_millis(1));
    }
    let t3 = store.claim_next("a", Some("t3"), MINUTE).unwrap().unwrap();
    assert_eq!(t3.handoff.id, ids[2]);
    assert!(store.claim_next("a", Some("t2"), MINUTE).unwrap().is_none());
    let order: Vec<String> = std::iter::from_fn(|| store.claim_next("a", None, MINUTE).unwrap())
        .map(|c| c.handoff.id)
        .collect();
    assert_eq!(order, [ids[0].clone(), ids[3].clone()]);
    assert_eq!(
        store
            .claim_next("b", None, MINUTE)
            .unwrap()
            .unwrap()
            .handoff
            .id,
        ids[1]
    );
}

pub fn claim_next_reclaims_lapsed_leases(store: Store) {
    let (store, clock) = timed(store);
    let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
    let first = store.claim_next("a1", None, MINUTE).unwrap().unwrap();
    assert!(store.claim_next("a2", None, MINUTE).unwrap().is_none());
    clock.advance(Duration::from_secs(61));
    let second = store.claim_next("a2", None, MINUTE).unwrap().unwrap();
    assert_eq!(second.handoff.id, h.id);
    assert_eq!(second.token, first.token + 1);
    assert_eq!(second.handoff.attempts, 1);
}

/// A lapsed lease is settled by the next claim that looks, before it takes anything, so the
/// record goes back to its place in the queue: ahead of newer work, in a claim from its task
/// as in one from anywhere.
pub fn lapsed_leases_go_before_newer_work(store: Store) {
    let (store, clock) = timed(store);
    let old = store.create(NewHandoff::new("t1", "goal")).unwrap();
    let other_task = store.create(NewHandoff::new("t2", "goal")).unwrap();
    let held = store.claim(&old.id, "a1", MINUTE).unwrap();
    let newer = store.create(NewHandoff::new("t1", "goal")).unwrap();
    clock.advance(Duration::from_secs(61));

    let again = store.claim_next("a2", Some("t1"), MINUTE).unwrap().unwrap();
    assert_eq!(again.handoff.id, old.id);
    assert_eq!((again.handoff.attempts, again.token), (1, held.token + 1));
    let next = store.claim_next("a3", Some("t1"), MINUTE).unwrap().unwrap();
    assert_eq!(next.handoff.id, newer.id);
    let rest = store.claim_next("a4", None, MINUTE).unwrap().unwrap();
    assert_eq!(rest.handoff.id, other_task.id);
    assert!(store.claim_next("a5", None, MINUTE).unwrap().is_none());
    assert_eq!(
        kind_of(&store.complete(&held, "late").unwrap_err()),
        ErrorKind::LeaseLost
    );
}

pub fn chain_and_policy(store: Store) {
    let store = store.with_policy(
        ChainPolicy {
            max_handoffs: 3,
            ..ChainPolicy::default()
        }
        .allow("claude", ["gemini"])
        .allow("gemini", ["codex", "claude"])
        .allow("codex", ["claude", "llama"]),
    );
    let hop = |from: &str, to: &str| NewHandoff::new("t1", "goal").from_agent(from).to_agent(to);
    store.create(hop("claude", "gemini")).unwrap();
    store.create(hop("gemini", "codex")).unwrap();
    let before = snapshot(&store);

    let revisit = store.create(hop("codex", "claude")).unwrap_err();
    let Error::ChainViolation(v) = &revisit else {
        panic!("{revisit}")
    };
    assert_eq!(v.path, ["claude", "gemini", "codex", "claude"]);
    assert_eq!(
        v.rule,
        ChainRule::Revisit {
            agent: "claude".into(),
            limit: 0
        }
    );

    let stranger = store.create(hop("codex", "mistral")).unwrap_err();
    let Error::ChainViolation(v) = &stranger else {
        panic!("{stranger}")
    };
    assert!(
        matches!(&v.rule, ChainRule::NotCollaborator { from, to } if from == "codex" && to == "mistral")
    );
    assert_eq!(snapshot(&store), before);

    store.create(hop("codex", "llama")).unwrap();
    let limit = store.create(hop("llama", "x")).unwrap_err();
    let Error::ChainViolation(v) = &limit else {
        panic!("{limit}")
    };
    assert_eq!(v.rule, ChainRule::MaxHandoffs { limit: 3 });
    assert!(
        limit
            .to_string()
            .contains("claude → gemini → codex → llama → x"),
        "{limit}"
    );

    let chain = store.chain("t1").unwrap();
    assert_eq!(chain.to_string(), "claude → gemini → codex → llama");
    assert_eq!(chain.hops.len(), 3);
    assert!(store.chain("t-none").unwrap().hops.is_empty());

    // Revisits may be allowed, for manager/worker loops.
    let loops = store.with_policy(ChainPolicy {
        max_revisits: 1,
        ..ChainPolicy::default()
    });
    let hop2 = |from: &str, to: &str| NewHandoff::new("t2", "goal").from_agent(from).to_agent(to);
    loops.create(hop2("manager", "worker")).unwrap();
    loops.create(hop2("worker", "manager")).unwrap();
    loops.create(hop2("manager", "worker")).unwrap();
    assert!(loops.create(hop2("worker", "manager")).is_err());
}

pub fn checkpoints_and_stalled(store: Store) {
    let (store, clock) = timed(store);
    let h = store
        .create(NewHandoff::new("t1", "goal").from_agent("claude"))
        .unwrap();
    let claim = store
        .claim(&h.id, "gemini", Duration::from_secs(3600))
        .unwrap();
    let cp = store
        .checkpoint(
            "t2",
            "codex",
            NewHandoff::new("", "refactor").progress("half way"),
        )
        .unwrap();
    assert_eq!((cp.kind, cp.status), (Kind::Checkpoint, Status::Completed));
    assert_eq!(cp.from_agent.as_deref(), Some("codex"));
    // A checkpoint is neither claimable nor a hop.
    assert!(store.claim_next("codex", None, MINUTE).unwrap().is_none());
    assert!(store.chain("t2").unwrap().hops.is_empty());

    clock.advance(Duration::from_secs(600));
    assert_eq!(
        store.stalled(Duration::from_secs(300)).unwrap(),
        ["t1", "t2"]
    );
    store.heartbeat(&claim).unwrap();
    assert_eq!(store.stalled(Duration::from_secs(300)).unwrap(), ["t2"]);
    let cp2 = store
        .checkpoint("t2", "codex", NewHandoff::new("", "refactor"))
        .unwrap();
    assert_eq!(cp2.parent_id.as_deref(), Some(cp.id.as_str()));
    assert!(store.stalled(Duration::from_secs(300)).unwrap().is_empty());
    store.complete(&claim, "done").unwrap();
    clock.advance(Duration::from_secs(600));
    assert_eq!(store.stalled(Duration::from_secs(300)).unwrap(), ["t2"]);
}

pub fn list_filters(store: Store) {
    let a = store
        .create(NewHandoff::new("t1", "g").to_agent("x"))
        .unwrap();
    let b = store.create(NewHandoff::new("t2", "g")).unwrap();
    let c = store
        .create(NewHandoff::new("t3", "g").to_agent("x"))
        .unwrap();
    store.claim(&b.id, "y", MINUTE).unwrap();
    let ids = |filter: ListFilter| -> Vec<String> {
        store
            .list(&filter)
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    assert_eq!(
        ids(ListFilter::default()),
        [a.id.clone(), b.id.clone(), c.id.clone()]
    );
    let pending = ListFilter {
        status: Some(Status::Pending),
        ..ListFilter::default()
    };
    assert_eq!(ids(pending.clone()), [a.id.clone(), c.id.clone()]);
    assert_eq!(
        ids(ListFilter {
            limit: Some(1),
            ..pending
        }),
        [a.id]
    );
    let to_x = ListFilter {
        to_agent: Some("x".into()),
        task_id: Some("t3".into()),
        ..ListFilter::default()
    };
    assert_eq!(ids(to_x), [c.id]);
}

pub fn events_replay_to_records(store: Store) {
    let (store, clock) = timed(store);
    let h = store.create(rich("t1")).unwrap();
    let c1 = store.claim(&h.id, "gemini", MINUTE).unwrap();
    store.heartbeat(&c1).unwrap();
    store.release(&c1, "handing back").unwrap();
    let c2 = store.claim(&h.id, "gemini", MINUTE).unwrap();
    clock.advance(Duration::from_secs(120));
    store.reap().unwrap();
    let c3 = store.claim(&h.id, "gemini", MINUTE).unwrap();
    assert!(c3.token > c2.token);
    store.complete(&c3, "done").unwrap();
    let other = store.create(NewHandoff::new("t2", "g")).unwrap();
    store.cancel(&other.id, "boss", None).unwrap();

    let all = store.events(None).unwrap();
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    for record in store.list(&ListFilter::default()).unwrap() {
        let log = store.events(Some(&record.id)).unwrap();
        assert_eq!(replay(&record, &log).as_ref(), Some(&record));
    }
}

pub fn bad_ids_change_nothing(store: Store) {
    store.create(NewHandoff::new("t1", "g")).unwrap();
    let before = snapshot(&store);
    let long = "x".repeat(300);
    for bad in ["../x", "a/b", "", "..", long.as_str(), "a b", "nul\0"] {
        let create = store
            .create(NewHandoff::new("t1", "g").id(bad))
            .unwrap_err();
        assert!(
            matches!(&create, Error::Validation { problems } if problems[0].field == "id"),
            "{create}"
        );
        assert_eq!(kind_of(&store.get(bad).unwrap_err()), ErrorKind::Validation);
        assert_eq!(
            kind_of(&store.claim(bad, "a", MINUTE).unwrap_err()),
            ErrorKind::Validation
        );
        assert_eq!(
            kind_of(&store.chain(bad).unwrap_err()),
            ErrorKind::Validation
        );
        let task = store.create(NewHandoff::new(bad, "g")).unwrap_err();
        assert!(
            matches!(&task, Error::Validation { problems } if problems[0].field == "task_id"),
            "{task}"
        );
    }
    // Agent names are display names ("Tech Support"), not ids: only blank, padded, overlong
    // or control-character names are refused.
    let long = "é".repeat(129);
    for bad in [
        "",
        " ",
        " padded",
        "padded ",
        "nul\0",
        "line\nbreak",
        long.as_str(),
    ] {
        assert_eq!(
            kind_of(&store.claim_next(bad, None, MINUTE).unwrap_err()),
            ErrorKind::Validation
        );
        let agent = store
            .create(NewHandoff::new("t1", "g").to_agent(bad))
            .unwrap_err();
        assert!(
            matches!(&agent, Error::Validation { problems } if problems[0].field == "to_agent"),
            "{agent}"
        );
    }
    assert_eq!(
        kind_of(&store.claim("x", "a", Duration::ZERO).unwrap_err()),
        ErrorKind::Validation
    );
    assert_eq!(snapshot(&store), before);
}

/// DESIGN §4: limits and revisits count along the new hop's path, so a task fans out freely.
pub fn limits_count_paths_not_tasks(store: Store) {
    // A queue: 1,000 work items in one task, each taken by one of four workers.
    let items: Vec<NewHandoff> = (0..1000)
        .map(|i| NewHandoff::new("queue", format!("item {i}")).from_agent("planner"))
        .collect();
    store.create_many(items).unwrap();
    for i in 0..1000 {
        let worker = format!("worker-{}", i % 4);
        let claim = store
            .claim_next(&worker, Some("queue"), MINUTE)
            .unwrap()
            .unwrap();
        store.complete(&claim, "done").unwrap();
    }
    assert!(
        store
            .claim_next("worker-0", None, MINUTE)
            .unwrap()
            .is_none()
    );

    // One path of five hops is the default limit: a → b → c → d → e → f, the sixth refused,
    // whether hops name their parent or are found through the agent that got the work.
    let mut parent: Option<String> = None;
    let agents = ["a", "b", "c", "d", "e", "f", "g"];
    for (i, pair) in agents.windows(2).enumerate() {
        let mut new = NewHandoff::new("path", "goal")
            .from_agent(pair[0])
            .to_agent(pair[1]);
        if i % 2 == 0 {
            new.parent_id = parent.clone();
        }
        let made = store.create(new);
        if i < 5 {
            parent = Some(made.unwrap().id);
        } else {
            let err = made.unwrap_err();
            let Error::ChainViolation(v) = &err else {
                panic!("{err}")
            };
            assert_eq!(v.rule, ChainRule::MaxHandoffs { limit: 5 });
            assert_eq!(v.path, agents);
        }
    }
    // Beside that full path the task goes on: a record with no sender starts a new path,
    // and so does a sender that got no work in this task.
    store
        .create(NewHandoff::new("path", "fresh").to_agent("a"))
        .unwrap();
    store
        .create(
            NewHandoff::new("path", "other")
                .from_agent("z")
                .to_agent("a"),
        )
        .unwrap();
}

/// DESIGN §3/§4: the claimant of an open handoff is the hop's real successor, so the policy
/// is checked when it claims; `claim_next` skips what the agent may not take.
pub fn open_handoffs_obey_the_policy_at_claim(store: Store) {
    let store = store.with_policy(
        ChainPolicy::default()
            .allow("manager", ["worker"])
            .allow("boss", ["stranger"]),
    );
    let for_workers = store
        .create(NewHandoff::new("t1", "a").from_agent("manager"))
        .unwrap();
    let for_stranger = store
        .create(NewHandoff::new("t1", "b").from_agent("boss"))
        .unwrap();
    let before = snapshot(&store);
    let err = store
        .claim(&for_workers.id, "stranger", MINUTE)
        .unwrap_err();
    let Error::ChainViolation(v) = &err else {
        panic!("{err}")
    };
    assert_eq!(
        v.rule,
        ChainRule::NotCollaborator {
            from: "manager".into(),
            to: "stranger".into()
        }
    );
    assert_eq!(snapshot(&store), before);
    let taken = store.claim_next("stranger", None, MINUTE).unwrap().unwrap();
    assert_eq!(taken.handoff.id, for_stranger.id);
    assert!(
        store
            .claim_next("stranger", None, MINUTE)
            .unwrap()
            .is_none()
    );
    let taken = store
        .claim_next("worker", Some("t1"), MINUTE)
        .unwrap()
        .unwrap();
    assert_eq!(taken.handoff.id, for_workers.id);

    // Revisits count at claim time too: with the default policy an agent cannot take back
    // the open work it handed over.
    let store = store.with_policy(ChainPolicy::default());
    let mine = store
        .create(NewHandoff::new("t2", "c").from_agent("solo"))
        .unwrap();
    assert_eq!(
        kind_of(&store.claim(&mine.id, "solo", MINUTE).unwrap_err()),
        ErrorKind::ChainViolation
    );
    assert!(
        store
            .claim_next("solo", Some("t2"), MINUTE)
            .unwrap()
            .is_none()
    );
    store.claim(&mine.id, "helper", MINUTE).unwrap();
}

/// DESIGN §3: what anyone can read (the record, its public fencing token) cannot settle a
/// claim; only the secret the claim handed out can.
pub fn claims_need_their_secret(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "g").to_agent("gemini"))
        .unwrap();
    let claim = store.claim(&h.id, "gemini", MINUTE).unwrap();
    let public = store.get(&h.id).unwrap();
    assert_eq!(public.claim_token, Some(claim.token));
    let before = snapshot(&store);
    let forged = ClaimRef {
        handoff_id: h.id.clone(),
        token: public.claim_token.unwrap(),
        secret: ClaimSecret::parse(&format!("hcs_{}", "0".repeat(64))).unwrap(),
        lease: MINUTE,
    };
    for err in [
        store.heartbeat(&forged).unwrap_err(),
        store.release(&forged, "mine now").unwrap_err(),
        store.complete(&forged, "done by someone else").unwrap_err(),
        store.cancel_claim(&forged, None).unwrap_err(),
    ] {
        assert_eq!(kind_of(&err), ErrorKind::LeaseLost, "{err}");
        // The token is current: what is wrong is the secret, and the message says so alone.
        assert!(err.to_string().contains("secret does not match"), "{err}");
        assert!(!err.to_string().contains("no longer current"), "{err}");
    }
    assert_eq!(snapshot(&store), before);
    // Nothing a reader sees carries the secret.
    let everything = format!(
        "{:?}{:?}",
        store.list(&ListFilter::default()).unwrap(),
        store.events(None).unwrap()
    );
    assert!(!everything.contains(claim.secret.expose()));
    assert!(!format!("{claim:?}").contains(claim.secret.expose()));
    // A reference built from the four values the claimer got settles it.
    let reference = ClaimRef {
        handoff_id: h.id.clone(),
        token: claim.token,
        secret: ClaimSecret::parse(claim.secret.expose()).unwrap(),
        lease: MINUTE,
    };
    store.heartbeat(&reference).unwrap();
    let done = store.complete(reference, "done").unwrap();
    assert_eq!(done.status, Status::Completed);
    // Every claim gets a secret of its own.
    let a = store.create(NewHandoff::new("t2", "g")).unwrap();
    let first = store.claim(&a.id, "w", MINUTE).unwrap();
    store.release(&first, "back").unwrap();
    let second = store.claim(&a.id, "w", MINUTE).unwrap();
    assert_ne!(first.secret, second.secret);
    let stale = ClaimRef {
        token: second.token,
        ..first.reference()
    };
    assert_eq!(
        kind_of(&store.complete(&stale, "x").unwrap_err()),
        ErrorKind::LeaseLost
    );
    store.complete(&second, "ok").unwrap();
    // Inside a transaction, the secret read is the one last set, whether or not the record
    // was read before (a backend may keep what it read with the record).
    let b = store.create(NewHandoff::new("t3", "g")).unwrap();
    let third = store.claim(&b.id, "w", MINUTE).unwrap();
    let (kept, replaced) = (third.secret.digest(), [7u8; 32]);
    store
        .backend()
        .write(&mut |tx| {
            assert!(tx.get(&b.id)?.is_some());
            assert_eq!(tx.claim_secret(&b.id)?, Some(kept));
            tx.set_claim_secret(&b.id, Some(replaced))?;
            assert_eq!(tx.claim_secret(&b.id)?, Some(replaced));
            tx.set_claim_secret(&b.id, None)?;
            assert_eq!(tx.claim_secret(&b.id)?, None);
            tx.set_claim_secret(&b.id, Some(kept))?;
            Ok(())
        })
        .unwrap();
    store.complete(&third, "ok").unwrap();
}

/// DESIGN §3: cancel by the creator, by the holder with its claim, or by anyone when the
/// record has no creator.
pub fn cancel_rights(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "g").from_agent("creator"))
        .unwrap();
    let before = snapshot(&store);
    let err = store.cancel(&h.id, "bystander", None).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    assert_eq!(snapshot(&store), before);
    let claim = store.claim(&h.id, "holder", MINUTE).unwrap();
    // The holder by name alone is refused; with its claim it may.
    assert_eq!(
        kind_of(&store.cancel(&h.id, "holder", None).unwrap_err()),
        ErrorKind::InvalidTransition
    );
    let cancelled = store.cancel_claim(&claim, Some("not mine to do")).unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
    let last = store.events(Some(&h.id)).unwrap().pop().unwrap();
    assert_eq!(last.actor.as_deref(), Some("holder"));

    let mine = store
        .create(NewHandoff::new("t1", "g").from_agent("creator"))
        .unwrap();
    store.claim(&mine.id, "holder", MINUTE).unwrap();
    assert_eq!(
        store.cancel(&mine.id, "creator", None).unwrap().status,
        Status::Cancelled
    );
    let anyones = store.create(NewHandoff::new("t1", "g")).unwrap();
    assert_eq!(
        store.cancel(&anyones.id, "anyone", None).unwrap().status,
        Status::Cancelled
    );
}

/// Records are read in pages by an id cursor, with any filter.
pub fn lists_are_paged(store: Store) {
    for i in 0..9 {
        store
            .create(NewHandoff::new(
                if i % 3 == 0 { "a" } else { "b" },
                format!("g{i}"),
            ))
            .unwrap();
    }
    let read = |filter: ListFilter| {
        let mut page = ListFilter {
            limit: Some(2),
            ..filter
        };
        let mut out: Vec<Handoff> = Vec::new();
        loop {
            let records = store.list(&page).unwrap();
            let Some(last) = records.last() else { break };
            page.after = Some(last.id.clone());
            out.extend(records);
        }
        out
    };
    assert_eq!(
        read(ListFilter::default()),
        store.list(&ListFilter::default()).unwrap()
    );
    let a = ListFilter {
        task_id: Some("a".into()),
        ..ListFilter::default()
    };
    assert_eq!(read(a.clone()), store.list(&a).unwrap());
    assert_eq!(read(a).len(), 3);
    let unknown = ListFilter {
        after: Some("no-such-id".into()),
        ..ListFilter::default()
    };
    assert!(store.list(&unknown).unwrap().is_empty());
}

/// The log is read in pages by a `seq` cursor, for one handoff, one task or the whole store.
pub fn events_are_paged(store: Store) {
    let mut ids = Vec::new();
    for i in 0..7 {
        let task = if i % 2 == 0 { "even" } else { "odd" };
        let h = store
            .create(NewHandoff::new(task, format!("g{i}")))
            .unwrap();
        let claim = store.claim(&h.id, "w", MINUTE).unwrap();
        store.complete(&claim, "done").unwrap();
        ids.push(h.id);
    }
    let all = store.events(None).unwrap();
    assert_eq!(all.len(), 21);
    let read = |filter: EventFilter| {
        let mut page = EventFilter {
            limit: Some(4),
            ..filter
        };
        let mut out = Vec::new();
        loop {
            let events = store.events_page(&page).unwrap();
            assert!(events.len() <= 4);
            let Some(last) = events.last() else { break };
            page.after = Some(last.seq);
            out.extend(events);
        }
        out
    };
    assert_eq!(read(EventFilter::default()), all);
    let even = read(EventFilter {
        task_id: Some("even".into()),
        ..EventFilter::default()
    });
    assert_eq!(even.len(), 12);
    assert!(
        even.iter()
            .all(|e| ids.iter().step_by(2).any(|id| *id == e.handoff_id))
    );
    let one = read(EventFilter {
        handoff_id: Some(ids[3].clone()),
        ..EventFilter::default()
    });
    assert_eq!(one, store.events(Some(&ids[3])).unwrap());
    let of_one: Vec<_> = all
        .iter()
        .filter(|e| e.handoff_id == ids[3])
        .cloned()
        .collect();
    assert_eq!(one, of_one);
    // Both filters: the handoff's events if it is the task's, else none.
    let both = |task: &str| {
        read(EventFilter {
            handoff_id: Some(ids[3].clone()),
            task_id: Some(task.into()),
            ..EventFilter::default()
        })
    };
    assert_eq!(both("odd"), of_one);
    assert!(both("even").is_empty());
    let after = all[10].seq;
    let tail = store
        .events_page(&EventFilter {
            after: Some(after),
            ..EventFilter::default()
        })
        .unwrap();
    assert_eq!(tail, all[11..]);
    assert!(
        store
            .events_page(&EventFilter {
                task_id: Some("none".into()),
                ..EventFilter::default()
            })
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        kind_of(
            &store
                .events_page(&EventFilter {
                    task_id: Some("a/b".into()),
                    ..EventFilter::default()
                })
                .unwrap_err()
        ),
        ErrorKind::Validation
    );
}

/// Agents are named as SDK users name them; ids stay strict.
pub fn display_names_are_agent_names(store: Store) {
    let h = store
        .create(
            NewHandoff::new("t1", "help")
                .from_agent("Triage bot")
                .to_agent("Tech Support"),
        )
        .unwrap();
    let claim = store
        .claim_next("Tech Support", None, MINUTE)
        .unwrap()
        .unwrap();
    assert_eq!(claim.handoff.id, h.id);
    let done = store.complete(&claim, "fixed").unwrap();
    assert_eq!(done.claimed_by.as_deref(), Some("Tech Support"));
    assert_eq!(
        store.chain("t1").unwrap().to_string(),
        "Triage bot → Tech Support"
    );
    let listed = store
        .list(&ListFilter {
            to_agent: Some("Tech Support".into()),
            ..ListFilter::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        kind_of(
            &store
                .create(NewHandoff::new("t1", "g").id("Tech Support"))
                .unwrap_err()
        ),
        ErrorKind::Validation
    );
}

pub fn create_many_is_atomic(store: Store) {
    let store = store.with_policy(ChainPolicy {
        max_handoffs: 1,
        ..ChainPolicy::default()
    });
    let before = snapshot(&store);
    // The second hop continues the first (b took x's work), so its path is two hops long.
    let err = store
        .create_many(vec![
            NewHandoff::new("t1", "a").from_agent("x").to_agent("b"),
            NewHandoff::new("t1", "b").from_agent("b").to_agent("c"),
        ])
        .unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::ChainViolation);
    assert_eq!(snapshot(&store), before);
    let made = store
        .create_many(vec![NewHandoff::new("t1", "a"), NewHandoff::new("t2", "b")])
        .unwrap();
    assert_eq!(made.len(), 2);
}

pub fn unknown_parent(store: Store) {
    let err = store
        .create(NewHandoff::new("t1", "g").parent_id("nope"))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Validation { problems } if problems[0].field == "parent_id"),
        "{err}"
    );
    let parent = store
        .create(NewHandoff::new("t1", "g").from_agent("a").to_agent("b"))
        .unwrap();
    let child = NewHandoff::new("t1", "g")
        .from_agent("b")
        .to_agent("c")
        .parent_id(&parent.id);
    assert_eq!(store.create(child).unwrap().parent_id, Some(parent.id));
}

pub fn path_stats(store: Store) {
    let (store, clock) = timed(store.with_policy(ChainPolicy::unlimited()));
    let hop = |task: &str, from: &str, to: Option<&str>| {
        let new = NewHandoff::new(task, "goal").from_agent(from);
        match to {
            Some(to) => new.to_agent(to),
            None => new,
        }
    };
    // claude → gemini: claimed after 10 s and completed 30 s after creation ...
    let a = store.create(hop("t1", "claude", Some("gemini"))).unwrap();
    clock.advance(Duration::from_secs(10));
    let claim = store.claim(&a.id, "gemini", MINUTE).unwrap();
    clock.advance(Duration::from_secs(20));
    store.complete(&claim, "done").unwrap();
    // ... and again, claimed after 20 s, released, claimed again, then rejected.
    let b = store.create(hop("t2", "claude", Some("gemini"))).unwrap();
    clock.advance(Duration::from_secs(20));
    let claim = store.claim(&b.id, "gemini", MINUTE).unwrap();
    store.release(&claim, "later").unwrap();
    clock.advance(Duration::from_secs(5));
    store.claim(&b.id, "gemini", MINUTE).unwrap();
    store.reject(&b.id, "gemini", "not mine").unwrap();
    // An open hand-off counts under whoever claimed it; its lease runs out for good.
    let c = store
        .create(hop("t3", "codex", None).max_attempts(1))
        .unwrap();
    store.claim(&c.id, "llama", MINUTE).unwrap();
    clock.advance(Duration::from_secs(61));
    store.reap().unwrap();
    // Unclaimed and checkpoints: counted, not timed; checkpoints not at all.
    store.create(hop("t4", "codex", None)).unwrap();
    store
        .checkpoint("t4", "codex", NewHandoff::new("", "cp"))
        .unwrap();

    let stats = store.stats().unwrap();
    let pairs: Vec<(&str, &str)> = stats
        .iter()
        .map(|s| (s.from_agent.as_str(), s.to_agent.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("claude", "gemini"), ("codex", "*"), ("codex", "llama")]
    );
    let cg = &stats[0];
    assert_eq!(
        (cg.total, cg.completed, cg.failed, cg.rejected),
        (2, 1, 0, 1)
    );
    assert_eq!(cg.median_claim_seconds, Some(15.0));
    assert_eq!(cg.median_complete_seconds, Some(30.0));
    assert_eq!((stats[1].total, stats[1].median_claim_seconds), (1, None));
    let cl = &stats[2];
    assert_eq!(
        (cl.total, cl.failed, cl.median_claim_seconds),
        (1, 1, Some(0.0))
    );

    // The queue at a glance: per status and addressee, checkpoints left out.
    let counts = store.queue_counts().unwrap();
    let queue: Vec<(Status, Option<&str>, u64)> = counts
        .iter()
        .map(|q| (q.status, q.to_agent.as_deref(), q.count))
        .collect();
    assert_eq!(
        queue,
        [
            (Status::Completed, Some("gemini"), 1),
            (Status::Failed, None, 1),
            (Status::Pending, None, 1),
            (Status::Rejected, Some("gemini"), 1),
        ]
    );
}

/// `claim_next_wait`: nothing to take gives nothing once the wait is over; work created while
/// a worker waits reaches it (and only it).
pub fn waiting_workers_get_new_work(store: Store) {
    let lease = MINUTE;
    assert!(
        store
            .claim_next_wait("w", None, lease, Duration::ZERO)
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .claim_next_wait("w", None, lease, Duration::from_millis(120))
            .unwrap()
            .is_none()
    );
    let waiter = {
        let store = store.clone();
        std::thread::spawn(move || {
            store
                .claim_next_wait("w", None, lease, Duration::from_secs(60))
                .unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let h = store.create(NewHandoff::new("t", "arrives later")).unwrap();
    let claim = waiter
        .join()
        .unwrap()
        .expect("the waiting worker gets the new work");
    assert_eq!(claim.handoff.id, h.id);
    assert_eq!(store.get(&h.id).unwrap().claimed_by.as_deref(), Some("w"));
}

/// A manager/worker run (DESIGN §8): each call settles the caller's claim and sends the next
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

/// Curation (DESIGN §9): a conversation on an agent's branch, cherry-picked by range, by
/// decision points and by tool sequences; facts verified by a verifier (one it fails on is
/// reported and left), then merged upward once.
pub fn curated_knowledge_moves_up_once_verified(store: Store) {
    use crate::curation::{FactStatus, NewFact, Score, Thresholds, Verdict, Verifier, VerifyItem};
    use crate::store::NewConversation;

    let messages = crate::curation::seed_example();
    let agent = "task/fix-oauth/agent-b";
    let bad = store.add_conversation(NewConversation {
        branch: "feature/x".into(),
        messages: messages.clone(),
        ..NewConversation::default()
    });
    assert_eq!(bad.unwrap_err().problems()[0].field, "branch");
    let conv = store
        .add_conversation(NewConversation {
            branch: agent.into(),
            messages,
            ..NewConversation::default()
        })
        .unwrap();
    assert_eq!(
        (
            conv.message_count,
            conv.task_id.as_deref(),
            conv.agent.as_deref()
        ),
        (11, Some("fix-oauth"), Some("agent-b"))
    );

    // A range outside the conversation: refused, nothing written.
    let before = store.list_conversations(None, None).unwrap();
    let err = store
        .cherry_pick(&conv.id, "task/fix-oauth", Some(9), Some(20), None)
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "to_seq");
    assert_eq!(store.list_conversations(None, None).unwrap(), before);

    let range = store
        .cherry_pick(&conv.id, "task/fix-oauth", Some(5), Some(9), None)
        .unwrap();
    assert_eq!(range.message_count, 5);
    assert_eq!(range.cherry_picked_from.as_deref(), Some(conv.id.as_str()));
    let source = store.messages(&conv.id, Some(4), Some(6)).unwrap();
    let picked: Vec<(u64, bool)> = source.iter().map(|m| (m.seq, m.is_cherry_picked)).collect();
    assert_eq!(picked, [(4, false), (5, true), (6, true)]);
    assert_eq!(source[1].cherry_picked_to[0].conversation_id, range.id);
    let decisions = store
        .cherry_pick_decisions(&conv.id, "task/fix-oauth", None)
        .unwrap();
    let texts: Vec<String> = store
        .messages(&decisions.id, None, None)
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(texts[0], "let me investigate...");
    assert_eq!(texts.len(), 3);
    let tools = store.cherry_pick_tools(&conv.id, "task/fix-oauth").unwrap();
    assert_eq!(tools.message_count, 6);

    store
        .add_facts(
            agent,
            vec![
                NewFact {
                    text: "refresh needs retries with backoff".into(),
                    confidence: Some(0.8),
                    source: None,
                },
                NewFact {
                    text: "the bug is in the login form".into(),
                    confidence: None,
                    source: None,
                },
                NewFact {
                    text: "the judge times out on this one".into(),
                    confidence: None,
                    source: None,
                },
            ],
        )
        .unwrap();
    // Without a verifier: the neutral 0.5, nothing verified, nothing invalidated, and nothing
    // written (no verdict given or undone).
    let before = store.facts(agent, None).unwrap();
    let neutral = store.verify(agent, None, &Thresholds::default()).unwrap();
    assert_eq!(
        (neutral.verified, neutral.invalidated, neutral.unverified),
        (0, 0, 4)
    );
    assert_eq!(store.facts(agent, None).unwrap(), before);

    struct Judge;
    impl Verifier for Judge {
        fn name(&self) -> &str {
            "judge"
        }
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            let score = match item {
                VerifyItem::Fact(fact) if fact.text.contains("times out") => {
                    return Err(crate::Error::invalid("verifier", "timed out"));
                }
                VerifyItem::Fact(fact) if fact.text.contains("backoff") => 0.9,
                VerifyItem::Fact(_) => 0.2,
                VerifyItem::Conversation(_, messages) => {
                    if messages.len() > 5 {
                        0.65
                    } else {
                        f64::NAN
                    }
                }
            };
            Ok(Score {
                score,
                explanation: Some("checked".into()),
            })
        }
    }
    let report = store
        .verify(agent, Some(&mut Judge), &Thresholds::default())
        .unwrap();
    assert_eq!(
        (report.verified, report.invalidated, report.failed),
        (2, 1, 1)
    );
    let facts = store.facts(agent, None).unwrap();
    let statuses: Vec<FactStatus> = facts.iter().map(|f| f.status).collect();
    assert_eq!(
        statuses,
        [
            FactStatus::Verified,
            FactStatus::Invalidated,
            FactStatus::Active
        ]
    );
    assert_eq!(facts[0].verified_by.as_deref(), Some("judge"));
    // A failed verifier leaves the item as it was: the neutral run before wrote nothing.
    assert_eq!(facts[2].score, None, "a failed verifier leaves the item");
    assert_eq!(facts[2].verified_by, None);
    assert_eq!(
        store
            .get_conversation(&conv.id)
            .unwrap()
            .verification_status,
        Verdict::Verified
    );

    let merged = store.merge(agent, None).unwrap();
    assert_eq!((merged.facts, merged.conversations), (1, 1), "{merged:?}");
    let up = store.facts("task/fix-oauth", None).unwrap();
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].origin.as_deref(), Some(facts[0].id.as_str()));
    assert_eq!(
        store
            .facts(agent, Some(FactStatus::Promoted))
            .unwrap()
            .len(),
        1
    );
    let again = store.merge(agent, None).unwrap();
    assert_eq!((again.facts, again.conversations), (0, 0));
    let branches: Vec<String> = store
        .branches()
        .unwrap()
        .into_iter()
        .map(|b| b.name.to_string())
        .collect();
    assert_eq!(branches, ["task/fix-oauth", agent]);

    // The successor's packet: the handoff, the task's verified facts and key conversations.
    let secret = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n";
    let leaked = NewFact {
        text: format!("the test key is {secret}"),
        confidence: None,
        source: None,
    };
    store.add_facts("task/fix-oauth", vec![leaked]).unwrap();
    struct Everything;
    impl Verifier for Everything {
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 1.0,
                explanation: None,
            })
        }
    }
    store
        .verify(
            "task/fix-oauth",
            Some(&mut Everything),
            &Thresholds::default(),
        )
        .unwrap();
    let h = store
        .create(NewHandoff::new("fix-oauth", "Ship the token refresh fix").to_agent("agent-c"))
        .unwrap();
    let packet = store
        .context_for(&h.id, crate::store::ContextOptions::tokens(4000))
        .unwrap();
    let md = packet.to_markdown();
    assert!(md.contains("Ship the token refresh fix"), "{md}");
    assert!(md.contains("refresh needs retries with backoff"), "{md}");
    assert!(
        !md.contains("the bug is in the login form"),
        "invalidated: {md}"
    );
    assert!(md.contains("found the issue"), "a key conversation: {md}");
    assert!(!md.contains(secret), "redacted: {md}");
    assert_eq!(
        kind_of(
            &store
                .context_for(
                    "no-such-handoff",
                    crate::store::ContextOptions::tokens(4000)
                )
                .unwrap_err()
        ),
        ErrorKind::NotFound
    );

    // Every change in the task's curation log, in order.
    let kinds: Vec<String> = store
        .curation_events(Some("fix-oauth"))
        .unwrap()
        .iter()
        .map(|e| {
            serde_json::to_value(e.kind)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "conversation_added",
            "cherry_picked",
            "cherry_picked",
            "cherry_picked",
            "facts_added",
            // The neutral run without a verifier wrote nothing, its log entry neither.
            "verified",
            "merged",
            "merged",
            "facts_added",
            "verified"
        ]
    );
    assert!(store.curation_events(None).unwrap().is_empty());
}

pub fn bundles_share_verified_knowledge_and_import_once(store: Store) {
    use crate::bundle::Visibility;
    use crate::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
    use crate::store::{NewBundle, NewConversation};

    struct ByText;
    impl Verifier for ByText {
        fn name(&self) -> &str {
            "by-text"
        }
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            let score = match item {
                VerifyItem::Fact(f) if f.text.contains("backoff") => 0.9,
                VerifyItem::Fact(_) => 0.1,
                VerifyItem::Conversation(..) => 0.8,
            };
            Ok(Score {
                score,
                explanation: None,
            })
        }
    }
    let fact = |text: &str| NewFact {
        text: text.into(),
        confidence: None,
        source: None,
    };
    let key = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n";
    store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth".into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .add_facts(
            "task/fix-oauth",
            vec![
                fact(&format!("refresh needs backoff; the test key was {key}")),
                fact("tokens last 1h"),
            ],
        )
        .unwrap();
    store
        .verify("task/fix-oauth", Some(&mut ByText), &Thresholds::default())
        .unwrap();

    let bundle = store
        .create_bundle(NewBundle::of_task(
            "OAuth2 Token Refresh Fix Playbook",
            "fix-oauth",
        ))
        .unwrap();
    assert_eq!((bundle.fact_count, bundle.conversation_count), (1, 1));
    assert_eq!(bundle.message_count, 11);
    assert_eq!(
        bundle.verification_status,
        crate::store::BundleStatus::Verified
    );
    // A private bundle has no token to find it by, in any listing.
    assert_eq!(bundle.share_token, None);
    let json = bundle.to_json().unwrap();
    assert!(!json.contains(key), "a bundle is redacted by default");
    assert_eq!(store.get_bundle(&bundle.id).unwrap(), bundle);
    assert!(store.list_bundles(None).unwrap()[0].share_token.is_none());

    // Sharing issues a token; a wrong one says what a revoked one does.
    let team = store.set_visibility(&bundle.id, Visibility::Team).unwrap();
    let token = team.share_token.clone().unwrap();
    assert!(token.starts_with("kb_") && token.len() >= 3 + 32);
    assert_eq!(store.bundle_by_token(&token).unwrap().id, bundle.id);
    let public = store
        .set_visibility(&bundle.id, Visibility::Public)
        .unwrap();
    assert_eq!(
        public.share_token.as_deref(),
        Some(token.as_str()),
        "shared to shared keeps it"
    );
    // Made private, the token dies for good: sharing again issues another.
    let private = store
        .set_visibility(&bundle.id, Visibility::Private)
        .unwrap();
    assert_eq!(private.share_token, None);
    let revoked = store.bundle_by_token(&token).unwrap_err();
    let wrong = store.bundle_by_token("kb_0000").unwrap_err();
    assert_eq!(revoked.to_string(), wrong.to_string());
    assert_eq!(revoked.kind(), ErrorKind::NotFound);
    let shared = store.set_visibility(&bundle.id, Visibility::Team).unwrap();
    let token = shared.share_token.clone().unwrap();
    assert!(
        store
            .bundle_by_token(&team.share_token.clone().unwrap())
            .is_err()
    );
    assert_eq!(store.bundle_by_token(&token).unwrap().id, bundle.id);
    assert_eq!(store.list_bundles(Some(Visibility::Team)).unwrap().len(), 1);
    assert!(
        store
            .list_bundles(Some(Visibility::Public))
            .unwrap()
            .is_empty()
    );

    // Hostile bundles: refused by name, nothing written.
    let events = store.curation_events(None).unwrap().len();
    let tampered = json
        .replace("tokens", "TOKENS")
        .replace("backoff", "no backoff");
    for (bad, field) in [
        (&json[..json.len() / 2], "bundle"),
        (tampered.as_str(), "content_hash"),
        ("{\"schema_version\": 99}", "schema_version"),
    ] {
        let err = store.import_bundle(bad, "main").unwrap_err();
        assert_eq!(err.problems()[0].field, field, "{err}");
    }
    let err = store.import_bundle(&json, "feature/x").unwrap_err();
    assert_eq!(err.problems()[0].field, "target_branch");
    assert!(store.facts("main", None).unwrap().is_empty());
    assert_eq!(store.curation_events(None).unwrap().len(), events);

    // A dry run says what the import will add, and writes nothing.
    let checked = store.check_bundle_import(&json, "main").unwrap();
    assert!(store.facts("main", None).unwrap().is_empty());
    assert_eq!(store.curation_events(None).unwrap().len(), events);
    let first = store.import_bundle(&json, "main").unwrap();
    assert_eq!(checked, first);
    assert_eq!(
        (
            first.facts_added,
            first.conversations_added,
            first.messages_added
        ),
        (1, 1, 11)
    );
    let again = store.import_bundle(&json, "main").unwrap();
    assert_eq!(
        (
            again.facts_added,
            again.facts_skipped,
            again.conversations_skipped
        ),
        (0, 1, 1)
    );
    // Unsigned: what the bundle says of its items is its claim, not this store's verdict.
    let imported = store.facts("main", None).unwrap();
    assert_eq!(imported.len(), 1);
    assert_eq!(imported[0].status, crate::curation::FactStatus::Active);
    assert_eq!(imported[0].score, Some(0.9), "the claim is kept");
    let short = &bundle.content_hash[..7 + 16];
    assert_eq!(imported[0].verified_by, Some(format!("bundle:{short}")));
    let conversations = store.list_conversations(Some("main"), None).unwrap();
    assert_eq!(conversations.len(), 1);
    assert_eq!(
        conversations[0].verification_status,
        crate::curation::Verdict::Unverified
    );
    assert_eq!((first.signed_by.as_deref(), first.trusted), (None, false));

    // Signed by a key this store trusts: the verdicts come in as verified, and the packet
    // says whose word they are.
    let keys = crate::bundle::BundleKeyPair::generate().unwrap();
    let signed = store.sign_bundle(&bundle.id, &keys.secret_key).unwrap();
    let signed_json = signed.to_json().unwrap();
    assert!(signed_json.contains(&keys.public_key) && !signed_json.contains(&keys.secret_key));
    let untrusted = store.import_bundle(&signed_json, "task/later").unwrap();
    assert_eq!(
        (untrusted.signed_by.as_deref(), untrusted.trusted),
        (Some(keys.public_key.as_str()), false)
    );
    assert_eq!(
        store.facts("task/later", None).unwrap()[0].status,
        crate::curation::FactStatus::Active
    );
    let trusted = store
        .trust_bundle_keys(std::slice::from_ref(&keys.public_key), &[])
        .unwrap();
    assert_eq!(trusted.len(), 1);
    assert_eq!(trusted[0].public_key, keys.public_key);
    let vouched = store.import_bundle(&signed_json, "task/vouched").unwrap();
    assert!(vouched.trusted);
    let fact = &store.facts("task/vouched", None).unwrap()[0];
    assert_eq!(fact.status, crate::curation::FactStatus::Verified);
    let by = format!("bundle:{short} signed by {}", keys.public_key);
    assert_eq!(fact.verified_by.as_deref(), Some(by.as_str()));
    let h = store
        .create(NewHandoff::new("vouched", "Use what the playbook says"))
        .unwrap();
    let md = store
        .context_for(&h.id, crate::store::ContextOptions::tokens(4000))
        .unwrap()
        .to_markdown();
    assert!(md.contains(&format!("(verified by {by})")), "{md}");
    // A signature that does not hold is refused by name; bad keys, every one at once.
    let forged = signed_json.replace(
        &keys.public_key,
        &crate::bundle::BundleKeyPair::generate().unwrap().public_key,
    );
    let err = store.import_bundle(&forged, "task/forged").unwrap_err();
    assert_eq!(err.problems()[0].field, "signature");
    let err = store
        .trust_bundle_keys(&["nope".into()], &["ed25519:00".into()])
        .unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["trust[0]", "distrust[0]"]);
    let err = store.sign_bundle(&bundle.id, &keys.public_key).unwrap_err();
    assert_eq!(err.problems()[0].field, "secret_key");
    assert!(
        store
            .trust_bundle_keys(&[], std::slice::from_ref(&keys.public_key))
            .unwrap()
            .is_empty()
    );

    store.delete_bundle(&bundle.id).unwrap();
    assert_eq!(
        store.get_bundle(&bundle.id).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(store.bundle_by_token(&token).is_err());
    assert_eq!(store.facts("main", None).unwrap().len(), 1, "imports stay");
}

pub fn replays_tell_a_task_in_order_and_compare_runs(store: Store) {
    use crate::curation::NewFact;

    let fact = |text: &str| NewFact {
        text: text.into(),
        confidence: None,
        source: None,
    };
    // A run without a plan: claude hands to gemini, which completes; facts on its branch.
    let h = store
        .create(
            NewHandoff::new("fix-oauth", "Fix the token refresh")
                .from_agent("claude")
                .to_agent("gemini")
                .decisions(["retry with backoff"]),
        )
        .unwrap();
    let claim = store.claim(&h.id, "gemini", MINUTE).unwrap();
    store.complete(&claim, "refresh retried").unwrap();
    store
        .add_facts("task/fix-oauth/gemini", vec![fact("refresh needs backoff")])
        .unwrap();
    let r = store.replay("fix-oauth", false).unwrap();
    let kinds: Vec<&str> = r.timeline.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "handoff.created",
            "handoff.claimed",
            "handoff.completed",
            "curation.facts_added"
        ]
    );
    assert!(r.timeline.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(r.timeline[1].agent.as_deref(), Some("gemini"));
    assert_eq!(r.timeline[2].data["outcome"], "refresh retried");
    assert_eq!(r.timeline[0].data["goal"], "Fix the token refresh");
    assert_eq!(r.timeline[0].data["kind"], "full");
    let gemini = r.agents.iter().find(|a| a.agent == "gemini").unwrap();
    assert_eq!(
        (gemini.claimed, gemini.completed, gemini.curated),
        (1, 1, 1)
    );
    assert_eq!(r.outcome.status, "completed");
    assert_eq!(r.outcome.result.as_deref(), Some("refresh retried"));
    assert_eq!(
        r.key_facts.len(),
        1,
        "not verified, but not invalidated either"
    );
    assert!(
        store
            .replay("fix-oauth", true)
            .unwrap()
            .key_facts
            .is_empty()
    );

    // A run with a plan: its steps are in the timeline, its status is the task's.
    let task = store.create_task(blog_task()).unwrap();
    let id = task.header.id.clone();
    store.start_task(&id).unwrap();
    let research = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.complete(&research, "notes").unwrap();
    let planned = store.replay(&id, false).unwrap();
    let kinds: Vec<&str> = planned.timeline.iter().map(|e| e.kind.as_str()).collect();
    for kind in [
        "task.created",
        "task.started",
        "task.step_started",
        "task.step_completed",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert_eq!(planned.outcome.status, "in_progress");

    let compared = store.compare("fix-oauth", &id).unwrap();
    assert_eq!(compared.agents.only_a, ["claude", "gemini"]);
    assert!(compared.agents.only_b.contains(&"researcher".to_owned()));
    assert_eq!(compared.decision_points.only_a, ["retry with backoff"]);
    assert_eq!(compared.facts.only_a, ["refresh needs backoff"]);
    // A protocol run's messages say which they are.
    store
        .initialize(crate::protocol::Initialize {
            task_id: "oauth-run".into(),
            manager: "lead".into(),
            worker: "dev".into(),
            instructions: "Add token refresh".into(),
            success_criteria: vec!["a 401 refreshes once".into()],
            ..crate::protocol::Initialize::default()
        })
        .unwrap();
    let run = store.replay("oauth-run", false).unwrap();
    assert_eq!(run.timeline[0].data["protocol"], "initialization");
    assert_eq!(run.timeline[0].data["iteration"], 1);
    assert!(
        run.timeline[0]
            .summary
            .starts_with("initialization message")
    );
    assert_eq!(
        store.replay("no-such-task", false).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        store.replay("../x", false).unwrap_err().kind(),
        ErrorKind::Validation
    );
}

/// What a judge supplies is held to a record field's size: an explanation over it fails its
/// item (reported, the item left as it was), a name over it refuses the verification.
pub fn judges_texts_are_held_to_the_limits(store: Store) {
    use crate::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};

    struct Wordy(String, usize);
    impl Verifier for Wordy {
        fn name(&self) -> &str {
            &self.0
        }
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 0.9,
                explanation: Some("x".repeat(self.1)),
            })
        }
    }
    let branch = "task/sizes";
    let fact = NewFact {
        text: "retries need backoff".into(),
        confidence: None,
        source: None,
    };
    store.add_facts(branch, vec![fact]).unwrap();
    let limit = store.limits().max_field_bytes;
    let before = store.facts(branch, None).unwrap();
    let report = store
        .verify(
            branch,
            Some(&mut Wordy("judge".into(), limit + 1)),
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!((report.verified, report.failed), (0, 1), "{report:?}");
    assert_eq!(store.facts(branch, None).unwrap(), before);
    let err = store
        .verify(
            branch,
            Some(&mut Wordy("j".repeat(limit + 1), 1)),
            &Thresholds::default(),
        )
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier.name");
    assert_eq!(store.facts(branch, None).unwrap(), before);
    let report = store
        .verify(
            branch,
            Some(&mut Wordy("judge".into(), limit)),
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!(report.verified, 1);
}

/// Seed 001 §8 steps 2–4: what agent A found on its own branch reaches B, who accepts A's
/// escalation, before anyone verifies it, marked unverified; A's history and the branch to
/// continue on come with it.
pub fn successors_receive_what_their_predecessors_knew(store: Store) {
    use crate::curation::NewFact;
    use crate::store::{ContextOptions, NewConversation};

    let finding = NewFact {
        text: "token_service.py:142 drops the refresh token after a 401".into(),
        confidence: Some(0.8),
        source: None,
    };
    store
        .add_facts("task/fix-oauth/agent-investigator", vec![finding])
        .unwrap();
    let said = |role: &str, content: &str| crate::context::Message {
        role: role.into(),
        content: content.into(),
        ..crate::context::Message::default()
    };
    store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth/agent-investigator".into(),
            title: Some("investigation".into()),
            task_id: Some("fix-oauth".into()),
            agent: Some("agent-investigator".into()),
            messages: vec![
                said("user", "Why does the refresh fail?"),
                said(
                    "assistant",
                    "The state machine resets on a 401 before the retry.",
                ),
            ],
        })
        .unwrap();
    let escalation = store
        .create(
            NewHandoff::new("fix-oauth", "Fix the OAuth2 token refresh")
                .from_agent("agent-investigator")
                .kind(Kind::Escalation)
                .instructions("Found the issue in token_service.py:142; needs OAuth2 expertise.")
                .blockers(["Unclear OAuth2 state transition after refresh failure"]),
        )
        .unwrap();
    let claim = store
        .claim(&escalation.id, "agent-oauth-expert", MINUTE)
        .unwrap();
    let packet = store
        .context_for(&claim.handoff.id, ContextOptions::default())
        .unwrap();
    let md = packet.to_markdown();
    assert!(
        md.contains("token_service.py:142 drops the refresh token after a 401 (unverified)"),
        "{md}"
    );
    assert!(
        md.contains(
            "## Unverified Findings of agent-investigator (on task/fix-oauth/agent-investigator)"
        ),
        "{md}"
    );
    assert!(
        md.contains("## Conversation: investigation by agent-investigator, unverified")
            && md.contains("The state machine resets on a 401 before the retry."),
        "{md}"
    );
    assert!(md.contains("Unclear OAuth2 state transition"), "{md}");
    assert!(
        md.contains("Continue on `task/fix-oauth/agent-oauth-expert`"),
        "{md}"
    );
    // Everything offered is accounted for.
    let m = &packet.manifest;
    assert!(m.dropped.is_empty() && m.truncated.is_empty(), "{m:?}");

    // The successor of a failed attempt reads what went wrong.
    let retried = store
        .create(NewHandoff::new("fix-oauth", "Rotate the signing key").max_attempts(3))
        .unwrap();
    let first = store.claim(&retried.id, "agent-a", MINUTE).unwrap();
    store
        .fail(&first, "the vault refused the rotation: 403")
        .unwrap();
    let second = store.claim(&retried.id, "agent-b", MINUTE).unwrap();
    let md = store
        .context_for(&second.handoff.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(
        md.contains("## Errors So Far")
            && md.contains("failed: the vault refused the rotation: 403"),
        "{md}"
    );
    store.release(&second, "not mine").unwrap();

    // The next hop sees the one before in its history.
    store.complete(&claim, "fixed the state machine").unwrap();
    let tests = store
        .create(
            NewHandoff::new("fix-oauth", "Add regression tests")
                .from_agent("agent-oauth-expert")
                .to_agent("agent-tester"),
        )
        .unwrap();
    let md = store
        .context_for(&tests.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(
        md.contains("## Agent History")
            && md.contains("agent-investigator → agent-oauth-expert (escalation")
            && md.contains("fixed the state machine"),
        "{md}"
    );
    // A's findings were A's: B's successor reads B's branch, not A's.
    assert!(!md.contains("(unverified)"), "{md}");
}

/// A plan step's successor reads the task's goal, the plan, and what the steps it depends on
/// produced.
pub fn a_plan_steps_successor_reads_its_dependencies(store: Store) {
    use crate::store::ContextOptions;

    let new = NewTask {
        name: "fix-oauth-token-refresh".into(),
        goal: "Token refresh survives a 401 from the identity provider".into(),
        success_criteria: vec!["no user is logged out by an expired token".into()],
        steps: vec![
            StepSpec::new("investigate", "Identify root cause", "investigator"),
            StepSpec::new("fix", "Implement fix", "expert").after(["investigate"]),
            StepSpec::new("test", "Add regression tests", "tester").after(["fix"]),
        ],
        ..NewTask::default()
    };
    let task = store.create_task(new).unwrap();
    store.start_task(&task.header.id).unwrap();
    let investigate = store
        .claim_next("investigator", None, MINUTE)
        .unwrap()
        .unwrap();
    store
        .complete(&investigate, "the state machine resets on a 401")
        .unwrap();
    let fix = store.claim_next("expert", None, MINUTE).unwrap().unwrap();
    store
        .complete(&fix, "retry with exponential backoff in token_service.py")
        .unwrap();
    let test = store.claim_next("tester", None, MINUTE).unwrap().unwrap();
    let md = store
        .context_for(&test.handoff.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(
        md.contains("Token refresh survives a 401 from the identity provider"),
        "the task's goal: {md}"
    );
    assert!(
        md.contains("fix (Implement fix, by expert, completed): retry with exponential backoff"),
        "step 2's outcome: {md}"
    );
    assert!(md.contains("- [x] investigate Identify root cause"), "{md}");
    assert!(
        md.contains("test Add regression tests (tester, in_progress) ← this handoff"),
        "{md}"
    );
    assert!(md.contains("no user is logged out"), "{md}");
}

/// Seed 001 §8 step 9: a playbook imported into `main` reaches the successor of a new task
/// about the same thing, found by relevance among unrelated knowledge, with its provenance.
pub fn knowledge_on_main_reaches_new_tasks_by_relevance(store: Store) {
    use crate::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
    use crate::store::{ContextOptions, NewBundle};

    let elsewhere = Store::memory();
    let mut facts: Vec<NewFact> = (0..200)
        .map(|i| NewFact {
            text: format!("invoice batch {i} rounds line totals before summing the ledger"),
            confidence: None,
            source: None,
        })
        .collect();
    facts.insert(
        117,
        NewFact {
            text: "OAuth2 token refresh needs a retry with exponential backoff after a 401".into(),
            confidence: None,
            source: None,
        },
    );
    elsewhere.add_facts("task/playbook", facts).unwrap();
    struct Everything;
    impl Verifier for Everything {
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 1.0,
                explanation: None,
            })
        }
    }
    elsewhere
        .verify(
            "task/playbook",
            Some(&mut Everything),
            &Thresholds::default(),
        )
        .unwrap();
    let bundle = elsewhere
        .create_bundle(NewBundle::of_task(
            "OAuth2 Token Refresh Fix Playbook",
            "playbook",
        ))
        .unwrap();
    // Signed by a key this store trusts, its verdicts hold here (an unsigned bundle's would be
    // its claim, reaching no successor until this store verified them).
    let keys = crate::bundle::BundleKeyPair::generate().unwrap();
    let json = elsewhere
        .sign_bundle(&bundle.id, &keys.secret_key)
        .unwrap()
        .to_json()
        .unwrap();
    store
        .trust_bundle_keys(std::slice::from_ref(&keys.public_key), &[])
        .unwrap();
    assert!(store.import_bundle(&json, "main").unwrap().trusted);

    let h = store
        .create(
            NewHandoff::new(
                "oauth-again",
                "Users are logged out when the OAuth token expires",
            )
            .pending(["make the token refresh robust"]),
        )
        .unwrap();
    let packet = store.context_for(&h.id, ContextOptions::default()).unwrap();
    let md = packet.to_markdown();
    assert!(md.contains("## Relevant Knowledge on main"), "{md}");
    assert!(
        md.contains(
            "OAuth2 token refresh needs a retry with exponential backoff after a 401 (verified by bundle:"
        ),
        "{md}"
    );
    assert!(
        !md.contains("invoice batch"),
        "unrelated facts stay out: {md}"
    );
}

/// The seed's 2,000-character packet: the Markdown fits, the mandatory sections are whole,
/// and whatever was cut says so, in the text and in the manifest.
pub fn packets_fit_a_character_budget(store: Store) {
    use crate::curation::NewFact;
    use crate::store::ContextOptions;

    let facts: Vec<NewFact> = (0..60)
        .map(|i| NewFact {
            text: format!(
                "finding {i}: the ledger export drifts by one cent on refunds of batch {i}"
            ),
            confidence: None,
            source: None,
        })
        .collect();
    store.add_facts("task/ledger/agent-a", facts).unwrap();
    let h = store
        .create(
            NewHandoff::new("ledger", "Find why the ledger export drifts")
                .from_agent("agent-a")
                .instructions("Start with the refunds of batch 7.")
                .blockers(["no access to the production ledger"])
                .completed(
                    (0..40).map(|i| format!("checked batch {i} against the bank statement")),
                ),
        )
        .unwrap();
    let packet = store
        .context_for(&h.id, ContextOptions::chars(2000))
        .unwrap();
    let md = packet.to_markdown();
    assert!(
        md.chars().count() <= 2000,
        "{} chars:\n{md}",
        md.chars().count()
    );
    assert_eq!(packet.tokens, md.chars().count());
    assert_eq!(packet.unit, crate::context::BudgetUnit::Chars);
    for whole in [
        "Find why the ledger export drifts",
        "Start with the refunds of batch 7.",
        "no access to the production ledger",
    ] {
        assert!(md.contains(whole), "{whole}: {md}");
    }
    let m = &packet.manifest;
    assert!(!m.dropped.is_empty(), "{m:?}");
    // The most recent findings are kept.
    assert!(md.contains("finding 59:"), "{md}");
    assert!(!md.contains("finding 0:"), "{md}");
    for cut in &m.truncated {
        let section = packet.sections.iter().find(|s| s.id == cut.id).unwrap();
        assert!(section.text.contains('…'), "{section:?}");
    }
    let err = store
        .context_for(&h.id, ContextOptions::chars(0))
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "budget_chars");
}

/// A scripted verifier for the curation cases: facts mentioning `backoff` and every
/// conversation pass; anything else fails.
struct ScoresBackoff;

impl crate::curation::Verifier for ScoresBackoff {
    fn name(&self) -> &str {
        "scores-backoff"
    }
    fn verify(
        &mut self,
        item: crate::curation::VerifyItem<'_>,
    ) -> crate::Result<crate::curation::Score> {
        use crate::curation::VerifyItem;
        let score = match item {
            VerifyItem::Fact(f) if f.text.contains("backoff") => 0.9,
            VerifyItem::Fact(_) => 0.1,
            VerifyItem::Conversation(..) => 0.8,
        };
        Ok(crate::curation::Score {
            score,
            explanation: Some("scripted".into()),
        })
    }
}

fn plain_fact(text: &str) -> crate::curation::NewFact {
    crate::curation::NewFact {
        text: text.into(),
        confidence: None,
        source: None,
    }
}

/// A task's bundle holds its verified knowledge whether or not it was merged since: bundles
/// follow provenance (where knowledge came from), not the branch it lies on now (seed 001 §8:
/// the bundle is made after the task was merged into `main`).
pub fn bundles_follow_provenance_after_a_merge(store: Store) {
    use crate::bundle::Visibility;
    use crate::curation::{FactStatus, Thresholds};
    use crate::store::{NewBundle, NewConversation};

    let agent = "task/fix-oauth/agent-b";
    let conversation = store
        .add_conversation(NewConversation {
            branch: agent.into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .add_facts(
            agent,
            vec![
                plain_fact("refresh needs backoff"),
                plain_fact("tokens last 1h"),
            ],
        )
        .unwrap();
    store
        .add_facts(
            "task/fix-oauth",
            vec![plain_fact("retry the refresh with backoff")],
        )
        .unwrap();
    store
        .cherry_pick(&conversation.id, "task/fix-oauth", Some(2), Some(9), None)
        .unwrap();
    for branch in [agent, "task/fix-oauth"] {
        store
            .verify(branch, Some(&mut ScoresBackoff), &Thresholds::default())
            .unwrap();
    }
    let before = store
        .create_bundle(NewBundle::of_task("Before the merge", "fix-oauth"))
        .unwrap();
    // The agent's branch into the task's, then the task's into main: everything verified
    // now lies on main, its sources `promoted`.
    store.merge(agent, None).unwrap();
    store.merge("task/fix-oauth", None).unwrap();
    assert!(
        store
            .facts("task/fix-oauth", Some(FactStatus::Verified))
            .unwrap()
            .is_empty()
    );
    let after = store
        .create_bundle(NewBundle {
            visibility: Visibility::Team,
            ..NewBundle::of_task("After the merge", "fix-oauth")
        })
        .unwrap();
    let texts = |b: &crate::store::Bundle| {
        let mut t: Vec<String> = b.data.facts.iter().map(|f| f.text.clone()).collect();
        t.sort();
        t
    };
    assert_eq!(
        texts(&after),
        ["refresh needs backoff", "retry the refresh with backoff"],
        "each verified fact once, the invalidated one left out"
    );
    assert_eq!(texts(&after), texts(&before));
    assert_eq!(
        after.conversation_count, before.conversation_count,
        "{after:?}"
    );
    // The agent's conversation (verified) and the pick: each once, though a merge copied the
    // agent's up to the task's branch.
    assert_eq!(after.conversation_count, 2);
    assert_eq!(
        after.verification_status,
        crate::store::BundleStatus::Verified
    );
    // A branch's bundle is the branch's: main's holds the copies.
    let main = store
        .create_bundle(NewBundle {
            task_id: None,
            branch: Some("main".into()),
            ..NewBundle::of_task("Main", "fix-oauth")
        })
        .unwrap();
    assert_eq!(main.fact_count, 2);
}

/// `cherry_pick` with the gate (the seed's `cherry_pick_conversation(verify=True)`): the
/// verifier scores what is picked before it is written; a verifier that fails writes nothing.
pub fn cherry_picks_can_pass_the_gate(store: Store) {
    use crate::curation::{Score, Thresholds, Verdict, Verifier, VerifyItem};
    use crate::ops::{self, Arguments, Operation};
    use crate::store::NewConversation;

    let source = store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth/agent-b".into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    // The verifier reads the pick as it will be written: its messages numbered from 1.
    struct Sees(Vec<u64>);
    impl Verifier for Sees {
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            if let VerifyItem::Conversation(c, messages) = item {
                assert_eq!(c.message_count, messages.len() as u64);
                self.0 = messages.iter().map(|m| m.seq).collect();
            }
            Ok(Score {
                score: 0.65,
                explanation: Some("the fix is tested".into()),
            })
        }
    }
    let mut sees = Sees(Vec::new());
    let picked = store
        .cherry_pick_verified(
            &source.id,
            "task/fix-oauth",
            Some(3),
            Some(9),
            None,
            &mut sees,
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!(sees.0, (1..=7).collect::<Vec<u64>>());
    assert_eq!(picked.message_count, 7);
    assert_eq!(picked.verification_status, Verdict::Verified);
    assert_eq!(picked.verification_score, Some(0.65));
    assert_eq!(picked.verified_by.as_deref(), Some("verifier"));
    assert_eq!(store.get_conversation(&picked.id).unwrap(), picked);
    let marked = store.messages(&source.id, Some(3), Some(3)).unwrap();
    assert!(marked[0].is_cherry_picked);

    // A failing verifier, or one out of range, writes nothing.
    let count = || store.list_conversations(None, None).unwrap().len();
    let before = count();
    let mut failing =
        crate::ops::JsonVerifier::new("down", |_| Err(Error::invalid("verifier", "timed out")));
    let err = store
        .cherry_pick_verified(
            &source.id,
            "task/fix-oauth",
            None,
            None,
            None,
            &mut failing,
            &Thresholds::default(),
        )
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier");
    let mut wild = crate::ops::JsonVerifier::new("wild", |_| Ok(serde_json::json!(1.5)));
    let args = ops::CherryPickArgs::read(
        serde_json::json!({"conversation_id": source.id, "target_branch": "task/fix-oauth",
                           "from_sequence": 2, "to_sequence": 4, "verify": true}),
        store.limits(),
    )
    .unwrap();
    let err = ops::CherryPick::run_with(&store, args.clone(), Some(&mut wild)).unwrap_err();
    assert_eq!(err.problems()[0].field, "score");
    // `verify` with no judge to ask is refused by name, before anything is written.
    let err = ops::CherryPick::run_with(&store, args.clone(), None).unwrap_err();
    assert_eq!(err.problems()[0].field, "verify");
    assert_eq!(count(), before);
    // The seed's argument names, and a low score invalidates.
    let mut low = crate::ops::JsonVerifier::new("low", |_| Ok(serde_json::json!([0.2, "wrong"])));
    let invalid = ops::CherryPick::run_with(&store, args, Some(&mut low)).unwrap();
    assert_eq!(invalid.message_count, 3);
    assert_eq!(invalid.verification_status, Verdict::Invalidated);
    assert_eq!(invalid.explanation.as_deref(), Some("wrong"));
    let plain = ops::CherryPick::call(
        &store,
        serde_json::json!({"conversation_id": source.id, "target_branch": "main",
                           "to_sequence": 2}),
    )
    .unwrap();
    assert_eq!(
        (plain.message_count, plain.verification_status),
        (2, Verdict::Unverified)
    );
    let log = store.curation_events(Some("fix-oauth")).unwrap();
    let kinds: Vec<_> = log.iter().map(|e| e.kind).collect();
    assert!(
        kinds.contains(&crate::curation::CurationChange::Verified),
        "{kinds:?}"
    );
}

/// `verify_bundle` runs the gate on a bundle's contents and records, on the bundle, its
/// status, its score and who verified it, leaving the portable form (and its hash) as it was.
pub fn bundles_record_their_verification(store: Store) {
    use crate::curation::Thresholds;
    use crate::ops::{self, Arguments, Operation};
    use crate::store::{BundleStatus, NewBundle, NewConversation};

    store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth".into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .add_facts(
            "task/fix-oauth",
            vec![
                plain_fact("refresh needs backoff"),
                plain_fact("tokens last 1h"),
            ],
        )
        .unwrap();
    let draft = store
        .create_bundle(NewBundle {
            verified_only: false,
            ..NewBundle::of_task("Unverified", "fix-oauth")
        })
        .unwrap();
    assert_eq!(draft.verification_status, BundleStatus::Draft);
    assert_eq!(draft.verified_by, None);

    // One fact fails the gate: the bundle stays a draft, its mean score and verifier recorded.
    let judged = store
        .verify_bundle(&draft.id, &mut ScoresBackoff, &Thresholds::default())
        .unwrap();
    assert_eq!(judged.verification_status, BundleStatus::Draft);
    assert_eq!(judged.verified_by.as_deref(), Some("scores-backoff"));
    let mean = (0.9 + 0.1 + 0.8) / 3.0;
    assert!((judged.verification_score.unwrap() - mean).abs() < 1e-9);
    assert_eq!(judged.content_hash, draft.content_hash);
    assert_eq!(judged.data, draft.data);
    assert_eq!(store.get_bundle(&draft.id).unwrap(), judged);
    // Lower thresholds: every item passes, and the bundle is verified.
    let args = ops::VerifyBundleArgs::read(
        serde_json::json!({"bundle_id": draft.id, "fact_threshold": 0.1,
                           "invalidate_below": 0.05}),
        store.limits(),
    )
    .unwrap();
    let verified =
        ops::VerifyBundle::run_with(&store, args.clone(), Some(&mut ScoresBackoff)).unwrap();
    assert_eq!(verified.verification_status, BundleStatus::Verified);
    // Without a judge, or with one that fails, nothing is recorded.
    let err = ops::VerifyBundle::run_with(&store, args.clone(), None).unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier");
    let mut failing = crate::ops::JsonVerifier::new("down", |item: serde_json::Value| {
        if item["kind"] == "conversation" {
            Err(Error::invalid("verifier", "timed out"))
        } else {
            Ok(serde_json::json!(0.9))
        }
    });
    let err = ops::VerifyBundle::run_with(&store, args, Some(&mut failing)).unwrap_err();
    assert_eq!(err.problems()[0].field, "conversations[0]");
    assert_eq!(store.get_bundle(&draft.id).unwrap(), verified);
    let err = ops::VerifyBundle::call(&store, serde_json::json!({"id": "nope"})).unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier");
    let missing = store
        .verify_bundle("nope", &mut ScoresBackoff, &Thresholds::default())
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    // The log keeps each item's score.
    let log = store.curation_events(Some("fix-oauth")).unwrap();
    let verifications: Vec<_> = log
        .iter()
        .filter(|e| e.detail["bundle_id"] == draft.id.as_str() && e.detail["items"].is_array())
        .collect();
    assert_eq!(verifications.len(), 2);
    assert_eq!(
        verifications[0].detail["items"].as_array().unwrap().len(),
        3
    );
}

/// `cherry_pick_to_facts` (seed §4.3): the heuristics draw the conclusions and decisions a
/// conversation states as candidate facts on the target branch, which the gate verifies
/// later; an extractor may draw them instead, and one that fails writes nothing.
pub fn conversations_become_candidate_facts(store: Store) {
    use crate::context::Message;
    use crate::curation::{FactStatus, Thresholds};
    use crate::ops::{self, Arguments, Operation};
    use crate::store::NewConversation;

    let say = |role: &str, content: &str| Message {
        role: role.into(),
        content: content.into(),
        ..Message::default()
    };
    let conversation = store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth/agent-b".into(),
            messages: vec![
                say(
                    "user",
                    "The token refresh fails after an hour. Why is that?",
                ),
                say(
                    "assistant",
                    "Let me look. The root cause is the expiry compared in seconds. \
                     Is the clock skewed? Ok.",
                ),
                say(
                    "assistant",
                    "The bug sits in token_service.py:142 where the refresh runs once.",
                ),
                say(
                    "assistant",
                    "I'll retry the refresh 3 times with backoff. The root cause is the \
                     expiry compared in seconds.",
                ),
                say("assistant", "Done."),
            ],
            ..NewConversation::default()
        })
        .unwrap();
    let facts = ops::CherryPickToFacts::call(
        &store,
        serde_json::json!({"conversation_id": conversation.id, "target_branch": "task/fix-oauth"}),
    )
    .unwrap();
    let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "The root cause is the expiry compared in seconds.",
            "The bug sits in token_service.py:142 where the refresh runs once.",
            "I'll retry the refresh 3 times with backoff.",
        ]
    );
    assert!(facts.iter().all(|f| f.status == FactStatus::Active));
    assert_eq!(
        facts[1].source.as_deref(),
        Some(format!("conversation:{}#3", conversation.id).as_str())
    );
    assert_eq!(store.facts("task/fix-oauth", None).unwrap(), facts);
    // Candidates: the gate verifies them later.
    let report = store
        .verify(
            "task/fix-oauth",
            Some(&mut ScoresBackoff),
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!((report.verified, report.invalidated), (1, 2));

    // An extractor draws them instead; its own sources are kept, the others get the
    // conversation's.
    let mut extractor = ops::JsonExtractor::new("llm", |item: serde_json::Value| {
        assert_eq!(item["kind"], "conversation");
        Ok(serde_json::json!({"facts": [
            "refresh tokens expire after 1h",
            {"text": "the fix shipped in 4.2", "confidence": 0.8, "source": "CHANGELOG"},
        ]}))
    });
    let args = ops::CherryPickToFactsArgs::read(
        serde_json::json!({"conversation_id": conversation.id, "target_branch": "main"}),
        store.limits(),
    )
    .unwrap();
    let drawn =
        ops::CherryPickToFacts::run_with(&store, args.clone(), Some(&mut extractor)).unwrap();
    assert_eq!(drawn.len(), 2);
    assert_eq!(
        drawn[0].source.as_deref(),
        Some(format!("conversation:{}", conversation.id).as_str())
    );
    assert_eq!(drawn[1].source.as_deref(), Some("CHANGELOG"));
    // A failing extractor, or one that draws a bad fact, writes nothing.
    let on_main = || store.facts("main", None).unwrap().len();
    let mut bad = ops::JsonExtractor::new("bad", |_| Ok(serde_json::json!(["ok", "", 3])));
    let err = ops::CherryPickToFacts::run_with(&store, args.clone(), Some(&mut bad)).unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["facts[2]"]);
    let mut empty = ops::JsonExtractor::new("empty", |_| Ok(serde_json::json!([" "])));
    let err = ops::CherryPickToFacts::run_with(&store, args.clone(), Some(&mut empty)).unwrap_err();
    assert_eq!(err.problems()[0].field, "facts[0].text");
    let mut down = ops::JsonExtractor::new("down", |_| Err(Error::invalid("extractor", "down")));
    assert!(ops::CherryPickToFacts::run_with(&store, args, Some(&mut down)).is_err());
    assert_eq!(on_main(), 2);
    // A conversation that states nothing writes nothing.
    let quiet = store
        .add_conversation(NewConversation {
            branch: "main".into(),
            messages: vec![say("user", "hi"), say("assistant", "Hello!")],
            ..NewConversation::default()
        })
        .unwrap();
    assert!(
        store
            .cherry_pick_to_facts(&quiet.id, "main", None)
            .unwrap()
            .is_empty()
    );
    let err = store
        .cherry_pick_to_facts(&quiet.id, "nope/x", None)
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "target_branch");
}

/// A folder of its own under the system's temporary folder, removed when dropped (the suite
/// is built without dev-dependencies under the `testing` feature).
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let path =
            std::env::temp_dir().join(format!("handoff-conformance-{:016x}", fastrand::u64(..)));
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A task of one step, run to its end by `worker`: its id and the step's handoff.
fn one_step_task_done(store: &Store, worker: &str) -> (String, String) {
    let id = store
        .create_task(NewTask {
            name: "One step".into(),
            steps: vec![StepSpec::new("only", "Only", worker)],
            ..NewTask::default()
        })
        .unwrap()
        .header
        .id;
    store.start_task(&id).unwrap();
    let claim = store
        .claim_next(worker, Some(&id), MINUTE)
        .unwrap()
        .unwrap();
    store.complete(&claim, "done").unwrap();
    assert_eq!(
        store.get_task(&id).unwrap().header.status,
        TaskStatus::Completed
    );
    (id, claim.handoff.id)
}

pub fn prune_removes_old_tasks_handoffs_and_keeps_their_history(store: Store) {
    let (store, clock) = timed(store);
    let (old, old_step) = one_step_task_done(&store, "worker");
    // A handoff of the old task in a session, finished: it goes, and leaves its session.
    let chat = store
        .create(NewHandoff::new(&old, "Answer the user").session_id("chat-1"))
        .unwrap();
    let kept_in_session = store
        .create(NewHandoff::new("elsewhere", "Other work").session_id("chat-1"))
        .unwrap();
    let claim = store.claim(&chat.id, "worker", MINUTE).unwrap();
    store.complete(&claim, "answered").unwrap();
    clock.advance(Duration::from_secs(40 * 86_400));
    let (recent, recent_step) = one_step_task_done(&store, "worker");
    // A cancelled task whose claimed step is still someone's work.
    let cancelled = store.create_task(blog_task()).unwrap().header.id;
    store.start_task(&cancelled).unwrap();
    let held = store
        .claim_next("researcher", Some(&cancelled), MINUTE)
        .unwrap()
        .unwrap();
    store.cancel_task(&cancelled, None).unwrap();
    let other_events = store.events(Some(&kept_in_session.id)).unwrap();

    // The defaults keep 100 tasks for 30 days: the 40-day-old task goes, the others stay.
    let pruned =
        <crate::ops::Prune as crate::ops::Operation>::call(&store, serde_json::json!({})).unwrap();
    assert_eq!(pruned, 1);
    assert!(store.get_task(&old).unwrap().header.pruned);
    for gone in [&old_step, &chat.id] {
        assert_eq!(
            kind_of(&store.get(gone).unwrap_err()),
            ErrorKind::NotFound,
            "{gone} is pruned"
        );
        assert!(store.events(Some(gone)).unwrap().is_empty());
    }
    assert!(
        store
            .list(&ListFilter {
                task_id: Some(old.clone()),
                ..ListFilter::default()
            })
            .unwrap()
            .is_empty()
    );
    assert!(store.chain(&old).unwrap().hops.is_empty());
    assert!(
        store
            .events_page(&EventFilter {
                task_id: Some(old.clone()),
                ..EventFilter::default()
            })
            .unwrap()
            .is_empty()
    );
    let session = store.session("chat-1").unwrap();
    assert_eq!(session.handoff_chain.len(), 1);
    assert_eq!(session.handoff_chain[0].handoff_id, kept_in_session.id);
    assert_eq!(
        store.events(Some(&kept_in_session.id)).unwrap(),
        other_events
    );
    // History and statistics still count the pruned task.
    assert_eq!(store.task_history(None).unwrap().len(), 3);
    assert_eq!(store.task_statistics().unwrap().total_tasks, 3);
    assert_eq!(store.get(&recent_step).unwrap().status, Status::Completed);
    assert!(!store.get_task(&recent).unwrap().header.pruned);

    // Keeping none prunes the rest, but a claimed handoff of a finished task stays, and
    // its holder can still finish it.
    assert_eq!(store.prune(0, 30).unwrap(), 2);
    assert_eq!(
        kind_of(&store.get(&recent_step).unwrap_err()),
        ErrorKind::NotFound
    );
    assert_eq!(store.get(&held.handoff.id).unwrap().status, Status::Claimed);
    store.complete(&held, "notes anyway").unwrap();
    // The store goes on: new work is written, numbered and read as before.
    let next = store.create(NewHandoff::new("after", "Go on")).unwrap();
    let events = store.events(None).unwrap();
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(events.last().unwrap().handoff_id, next.id);
}

/// A memory store on a whole-second clock (every backend keeps such times exactly) holding a
/// bit of everything: handoffs (one claimed), a running task, memory, a session, a setting.
fn varied_source() -> (Store, crate::Claim, String, Arc<ManualClock>) {
    let (source, clock) = timed(Store::memory());
    source.save_policy().unwrap();
    let first = source.create(rich("move-1")).unwrap();
    let claim = source.claim(&first.id, "gemini", MINUTE).unwrap();
    source
        .create(NewHandoff::new("move-1", "Check the copy").parent_id(&first.id))
        .unwrap();
    let task = source.create_task(blog_task()).unwrap().header.id;
    source.start_task(&task).unwrap();
    let research = source
        .claim_next("researcher", Some(&task), MINUTE)
        .unwrap()
        .unwrap();
    source.complete(&research, "notes in research.md").unwrap();
    let mut value = crate::Metadata::new();
    value.insert("tone".into(), serde_json::json!("plain"));
    source.memory_put("agent:writer", value, None).unwrap();
    (source, claim, task, clock)
}

/// Whether `a` and `b` answer alike: records, the log (in order), tasks, memory, sessions.
fn assert_same_answers(a: &Store, b: &Store, task: &str) {
    assert_eq!(
        a.list(&ListFilter::default()).unwrap(),
        b.list(&ListFilter::default()).unwrap()
    );
    let log = |s: &Store| -> Vec<(
        String,
        chrono::DateTime<chrono::Utc>,
        Option<String>,
        Change,
    )> {
        s.events(None)
            .unwrap()
            .into_iter()
            .map(|e| (e.handoff_id, e.at, e.actor, e.change))
            .collect()
    };
    assert_eq!(log(a), log(b));
    assert_eq!(a.get_task(task).unwrap(), b.get_task(task).unwrap());
    assert_eq!(a.task_events(task).unwrap(), b.task_events(task).unwrap());
    assert_eq!(
        a.replay(task, false).unwrap(),
        b.replay(task, false).unwrap()
    );
    assert_eq!(
        a.memory_get("agent:writer").unwrap(),
        b.memory_get("agent:writer").unwrap()
    );
    assert_eq!(a.session("sess-1").unwrap(), b.session("sess-1").unwrap());
    assert_eq!(a.saved_policy().unwrap(), b.saved_policy().unwrap());
    assert_eq!(a.chain("move-1").unwrap(), b.chain("move-1").unwrap());
}

pub fn backups_restore_into_any_store(store: Store) {
    let dir = Scratch::new();
    let (source, claim, task, clock) = varied_source();
    // The same time as the source's: its claims' leases have not run out.
    let store = store.with_clock(clock);
    let path = dir.path().join("source.backup");
    let written = source.backup(&path).unwrap();
    assert_eq!(written.records, 5);
    assert!(written.documents > 0 && written.settings == 1);
    assert_eq!(
        kind_of(&source.backup(&path).unwrap_err()),
        ErrorKind::Validation,
        "a backup never overwrites a file"
    );

    // Into the store under test, then out of it again into memory: both answer as the source.
    assert_eq!(store.restore(&path).unwrap(), written);
    assert_same_answers(&source, &store, &task);
    let again = dir.path().join("again.backup");
    let rewritten = store.backup(&again).unwrap();
    // Reading built the knowledge index on both sides (a lazy write): the source, read again,
    // holds what the copy does.
    let fresh = source.backup(dir.path().join("fresh.backup")).unwrap();
    assert_eq!(
        (rewritten.records, rewritten.events, rewritten.documents),
        (fresh.records, fresh.events, fresh.documents)
    );
    let copy = Store::memory();
    copy.restore(&again).unwrap();
    assert_same_answers(&source, &copy, &task);

    // A store with anything in it is refused, naming the store.
    let err = store.restore(&path).unwrap_err();
    assert_eq!(err.problems()[0].field, "store", "{err}");

    // The holder of a claim made before the backup settles it on the restored store, and a
    // claim without its secret is still refused.
    let forged = ClaimRef {
        secret: ClaimSecret::generate().unwrap(),
        ..ClaimRef::from(&claim)
    };
    assert_eq!(
        kind_of(&store.complete(forged, "forged").unwrap_err()),
        ErrorKind::LeaseLost
    );
    assert_eq!(
        store.complete(&claim, "moved").unwrap().status,
        Status::Completed
    );
    // Restored tasks go on where they were.
    let draft = store
        .claim_next("writer", Some(&task), MINUTE)
        .unwrap()
        .unwrap();
    store.complete(&draft, "drafted").unwrap();
}

pub fn damaged_backups_are_refused_and_write_nothing(store: Store) {
    let dir = Scratch::new();
    let (source, _, _, _) = varied_source();
    let path = dir.path().join("good.backup");
    source.backup(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let damaged = |name: &str, bytes: &[u8], expected: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let err = store.restore(&file).unwrap_err();
        assert_eq!(err.problems().len(), 1, "{name}: {err}");
        assert_eq!(err.problems()[0].field, "path", "{name}: {err}");
        assert!(
            err.problems()[0].rule.contains(expected),
            "{name}: {err} should say {expected}"
        );
        assert!(
            store.list(&ListFilter::default()).unwrap().is_empty(),
            "{name}"
        );
        assert!(store.events(None).unwrap().is_empty(), "{name}");
        assert!(
            store.memory_get("agent:writer").unwrap().is_none(),
            "{name}"
        );
        assert!(store.saved_policy().unwrap().is_none(), "{name}");
    };
    // Cut before its end, in the middle of a line, or edited: each is named.
    let without_end = lines[..lines.len() - 1].join("\n") + "\n";
    damaged("cut.backup", without_end.as_bytes(), "cut short");
    damaged("torn.backup", &good[..good.len() - 10], "cut short");
    let edited = text.replacen("Finish the migration", "Finish the migrashun", 1);
    damaged("edited.backup", edited.as_bytes(), "checksum");
    let mut extra = good.clone();
    extra.extend_from_slice(b"{\"setting\":{\"key\":\"z\",\"value\":\"1\"}}\n");
    damaged("extra.backup", &extra, "goes on after");
    // Foreign files: another format, an empty file, binary noise, a newer version.
    damaged(
        "foreign.json",
        b"{\"handoffs\": []}\n",
        "not a handoff backup",
    );
    damaged("empty.backup", b"", "not a handoff backup");
    damaged(
        "noise.backup",
        &[0xff, 0x00, 0x13, b'\n', 0x80],
        "not a handoff backup",
    );
    let newer = text.replacen("handoff-backup 1", "handoff-backup 2", 1);
    damaged("newer.backup", newer.as_bytes(), "not a handoff backup");
    // A line that is no backup line.
    let mut odd = lines.clone();
    odd.insert(2, "{\"table\":\"drop\"}");
    damaged("odd.backup", (odd.join("\n") + "\n").as_bytes(), "line 3");
    let missing = dir.path().join("missing.backup");
    assert_eq!(
        store.restore(&missing).unwrap_err().problems()[0].field,
        "path"
    );
    // The good file still restores.
    store.restore(&path).unwrap();
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 5);
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
