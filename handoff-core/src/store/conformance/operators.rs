//! The conformance cases of what operators do to handoffs: priorities, retries of dead work,
//! revoked claims, progress reported with heartbeats, and the trace context a record carries.

use super::*;

/// The field the first problem of a validation error names.
fn field_of(err: &Error) -> String {
    err.problems()
        .first()
        .map(|p| p.field.clone())
        .unwrap_or_default()
}

pub fn priorities_jump_the_queue(store: Store) {
    let new = |goal: &str, priority: i32| NewHandoff::new("t1", goal).priority(priority);
    let low = store.create(new("low", -1)).unwrap();
    let first = store.create(new("first", 0)).unwrap();
    let urgent = store.create(new("urgent", 5)).unwrap();
    let urgent_too = store.create(new("urgent too", 5)).unwrap();
    let mine = store
        .create(new("mine", 9).to_agent("billing").id("mine"))
        .unwrap();
    assert_eq!(urgent.priority, 5);
    let created = store.events(Some(&urgent.id)).unwrap();
    assert!(
        matches!(created[0].change, Change::Created { priority: 5, .. }),
        "{:?}",
        created[0].change
    );
    // The highest priority first, the oldest within one; another agent's work is not taken.
    let next = |agent: &str, task: Option<&str>| {
        store
            .claim_next(agent, task, MINUTE)
            .unwrap()
            .map(|c| c.handoff.id)
    };
    assert_eq!(next("codex", None).as_deref(), Some(urgent.id.as_str()));
    // Raised above everything: taken next, in a task's queue as in the store's.
    let raised = store.set_priority(&low.id, 7, "ops").unwrap();
    assert_eq!(raised.priority, 7);
    let log = store.events(Some(&low.id)).unwrap();
    let last = log.last().unwrap();
    assert_eq!(last.change, Change::PriorityChanged { priority: 7 });
    assert_eq!(last.actor.as_deref(), Some("ops"));
    assert_eq!(next("codex", Some("t1")).as_deref(), Some(low.id.as_str()));
    assert_eq!(next("billing", None).as_deref(), Some(mine.id.as_str()));
    assert_eq!(next("codex", None).as_deref(), Some(urgent_too.id.as_str()));
    assert_eq!(next("codex", None).as_deref(), Some(first.id.as_str()));
    assert_eq!(next("codex", None), None);
    // A finished handoff has no place in the queue; bad input changes nothing.
    let claim = store.claim_next("codex", None, MINUTE).unwrap();
    assert!(claim.is_none());
    let before = snapshot(&store);
    let done = store.claim(&first.id, "codex", MINUTE).unwrap_err();
    assert_eq!(kind_of(&done), ErrorKind::AlreadyClaimed);
    let err = store.set_priority(&first.id, 1, "").unwrap_err();
    assert_eq!(field_of(&err), "by");
    assert_eq!(
        kind_of(&store.set_priority("missing", 1, "ops").unwrap_err()),
        ErrorKind::NotFound
    );
    assert_eq!(snapshot(&store), before);
}

pub fn dead_handoffs_are_retried(store: Store) {
    let h = store
        .create(NewHandoff::new("t1", "goal").max_attempts(1))
        .unwrap();
    let claim = store.claim(&h.id, "a1", MINUTE).unwrap();
    let dead = store.fail(&claim, "the API said 500").unwrap();
    assert_eq!(dead.status, Status::Failed);
    assert_eq!(dead.attempts, 1);
    // Only an operator's retry brings it back, its attempts counted afresh.
    let before = snapshot(&store);
    for status_error in [
        store.retry(&h.id, "", None).unwrap_err(),
        store.retry("missing", "ops", None).unwrap_err(),
    ] {
        assert!(
            matches!(
                kind_of(&status_error),
                ErrorKind::Validation | ErrorKind::NotFound
            ),
            "{status_error}"
        );
    }
    assert_eq!(snapshot(&store), before);
    let retried = store.retry(&h.id, "ops", Some("the API is back")).unwrap();
    assert_eq!(retried.status, Status::Pending);
    assert_eq!(retried.attempts, 0);
    assert_eq!(retried.outcome, None);
    assert_eq!(retried.completed_at, None);
    let log = store.events(Some(&h.id)).unwrap();
    let last = log.last().unwrap();
    assert_eq!(
        last.change,
        Change::Retried {
            from: Status::Failed,
            reason: Some("the API is back".into())
        }
    );
    assert_eq!(last.actor.as_deref(), Some("ops"));
    // The history keeps the failed attempt, and the log still replays to the record.
    assert!(
        log.iter()
            .any(|e| matches!(e.change, Change::Failed { .. }))
    );
    assert_eq!(replay(&retried, &log), Some(retried.clone()));
    // The old claim stays dead; a new worker takes it and finishes.
    assert_eq!(
        kind_of(&store.complete(&claim, "late").unwrap_err()),
        ErrorKind::LeaseLost
    );
    let again = store.claim_next("a2", None, MINUTE).unwrap().unwrap();
    assert_eq!(again.handoff.id, h.id);
    assert_eq!(again.token, 2);
    let done = store.complete(&again, "shipped").unwrap();
    assert_eq!(done.status, Status::Completed);
    // A completed, pending or claimed handoff is not retried.
    let before = snapshot(&store);
    let err = store.retry(&h.id, "ops", None).unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    let open = store.create(NewHandoff::new("t2", "goal")).unwrap();
    let before_open = snapshot(&store);
    assert_eq!(
        kind_of(&store.retry(&open.id, "ops", None).unwrap_err()),
        ErrorKind::InvalidTransition
    );
    assert_eq!(snapshot(&store), before_open);
    assert_ne!(snapshot(&store), before);
    // Rejected and cancelled ones are.
    let refused = store
        .create(NewHandoff::new("t3", "goal").to_agent("billing"))
        .unwrap();
    store.reject(&refused.id, "billing", "not mine").unwrap();
    assert_eq!(
        store.retry(&refused.id, "ops", None).unwrap().status,
        Status::Pending
    );
    store.cancel(&open.id, "ops", None).unwrap();
    assert_eq!(
        store.retry(&open.id, "ops", None).unwrap().status,
        Status::Pending
    );
}

pub fn operators_revoke_stuck_claims(store: Store) {
    let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
    let before = snapshot(&store);
    let err = store.revoke_claim(&h.id, "ops", "stuck").unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::InvalidTransition, "{err}");
    assert_eq!(snapshot(&store), before);
    let claim = store.claim(&h.id, "a1", MINUTE).unwrap();
    let err = store.revoke_claim(&h.id, "ops", " ").unwrap_err();
    assert_eq!(field_of(&err), "reason");
    let revoked = store
        .revoke_claim(&h.id, "ops", "no heartbeat progress in an hour")
        .unwrap();
    assert_eq!(revoked.status, Status::Pending);
    assert_eq!(revoked.attempts, 1);
    assert_eq!(revoked.lease_until, None);
    let last = store.events(Some(&h.id)).unwrap().pop().unwrap();
    assert_eq!(
        last.change,
        Change::Revoked {
            token: 1,
            reason: "no heartbeat progress in an hour".into()
        }
    );
    assert_eq!(last.actor.as_deref(), Some("ops"));
    // The holder learns it lost the claim at its next heartbeat.
    assert_eq!(
        kind_of(&store.heartbeat(&claim).unwrap_err()),
        ErrorKind::LeaseLost
    );
    let next = store.claim_next("a2", None, MINUTE).unwrap().unwrap();
    assert_eq!(next.token, 2);
}

pub fn heartbeats_carry_progress(store: Store) {
    let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
    assert_eq!(h.progress, None);
    let claim = store.claim(&h.id, "a1", MINUTE).unwrap();
    let progress = serde_json::json!({"step": "tests", "done": 3, "of": 7});
    let beat = store
        .heartbeat_with(&claim, Some(progress.clone()))
        .unwrap();
    assert_eq!(beat.progress.as_ref(), Some(&progress));
    assert_eq!(store.get(&h.id).unwrap().progress.as_ref(), Some(&progress));
    let last = store.events(Some(&h.id)).unwrap().pop().unwrap();
    assert!(
        matches!(&last.change, Change::Heartbeat { progress: Some(p), .. } if *p == progress),
        "{:?}",
        last.change
    );
    // A plain heartbeat keeps the last progress.
    assert_eq!(
        store.heartbeat(&claim).unwrap().progress.as_ref(),
        Some(&progress)
    );
    // Too much is refused by name, and nothing changes.
    let before = snapshot(&store);
    let big = serde_json::json!({"log": "x".repeat(5000)});
    let err = store.heartbeat_with(&claim, Some(big)).unwrap_err();
    assert_eq!(field_of(&err), "progress", "{err}");
    assert_eq!(snapshot(&store), before);
    // The next holder starts without the last one's progress.
    store.release(&claim, "handing on").unwrap();
    let next = store.claim(&h.id, "a2", MINUTE).unwrap();
    assert_eq!(next.handoff.progress, None);
    let log = store.events(Some(&h.id)).unwrap();
    assert_eq!(replay(&next.handoff, &log), Some(next.handoff.clone()));
}

pub fn records_carry_their_trace_context(store: Store) {
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let h = store
        .create(NewHandoff::new("t1", "goal").trace_context(parent, Some("vendor=1".into())))
        .unwrap();
    let claim = store.claim_next("a1", None, MINUTE).unwrap().unwrap();
    assert_eq!(claim.handoff.id, h.id);
    assert_eq!(claim.handoff.traceparent.as_deref(), Some(parent));
    assert_eq!(claim.handoff.tracestate.as_deref(), Some("vendor=1"));
    let before = snapshot(&store);
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "not a traceparent",
    ] {
        let err = store
            .create(NewHandoff::new("t1", "goal").trace_context(bad, None))
            .unwrap_err();
        assert_eq!(field_of(&err), "traceparent", "{err}");
    }
    assert_eq!(snapshot(&store), before);
}
