//! The conformance cases of handoffs: create, claim, heartbeat, settle, the chain policy, the log,
//! lists and pages.

use super::*;

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
            to_agent: created.to_agent.clone(),
            priority: 0,
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

/// docs/design.md §4: limits and revisits count along the new hop's path, so a task fans out freely.
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

/// docs/design.md §3/§4: the claimant of an open handoff is the hop's real successor, so the policy
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

/// docs/design.md §3: what anyone can read (the record, its public fencing token) cannot settle a
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

/// docs/design.md §3: cancel by the creator, by the holder with its claim, or by anyone when the
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
