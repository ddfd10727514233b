//! The conformance case of the metrics: what an operator's scrape reads is what happened.

use super::*;

pub fn metrics_count_what_happened(store: Store) {
    let (store, clock) = timed(store);
    let empty = store.metrics().unwrap();
    assert!(empty.handoffs.is_empty() && empty.steps.is_empty());
    assert_eq!(empty.claim_wait.count, 0);
    assert!(
        empty
            .events
            .iter()
            .any(|e| e.kind == "created" && e.count == 0),
        "the usual kinds are there before they happen"
    );

    // 10 creates (the last an escalation nobody takes), 9 claims 2 s later, and 10 s later 7
    // completions and 2 failures on their last attempt.
    let mut ids = Vec::new();
    for i in 0..10 {
        let mut new = NewHandoff::new("metrics", "goal").max_attempts(1);
        if i % 2 == 0 {
            new = new.to_agent("worker");
        }
        if i == 9 {
            new = new.kind(Kind::Escalation);
        }
        ids.push(store.create(new).unwrap().id);
    }
    clock.advance(Duration::from_secs(2));
    let claims: Vec<_> = ids[..9]
        .iter()
        .map(|id| store.claim(id, "worker", MINUTE).unwrap())
        .collect();
    clock.advance(Duration::from_secs(10));
    for claim in &claims[..7] {
        store.complete(claim, "done").unwrap();
    }
    for claim in &claims[7..] {
        store.fail(claim, "boom").unwrap();
    }

    let m = store.metrics().unwrap();
    let in_status = |status: Status| -> u64 {
        m.handoffs
            .iter()
            .filter(|c| c.status == status)
            .map(|c| c.count)
            .sum()
    };
    assert_eq!(in_status(Status::Completed), 7);
    assert_eq!(in_status(Status::Failed), 2);
    assert_eq!(in_status(Status::Pending), 1);
    assert_eq!(in_status(Status::Claimed), 0);
    let worker_completed = m
        .handoffs
        .iter()
        .find(|c| c.status == Status::Completed && c.to_agent.as_deref() == Some("worker"))
        .unwrap();
    assert_eq!(worker_completed.count, 4, "indexes 0, 2, 4, 6");
    let events = |kind: &str| m.events.iter().find(|e| e.kind == kind).map(|e| e.count);
    assert_eq!(events("created"), Some(10));
    assert_eq!(events("claimed"), Some(9));
    assert_eq!(events("completed"), Some(7));
    assert_eq!(events("failed"), Some(2));
    assert_eq!(events("lease_expired"), Some(0));
    assert!(m.events.windows(2).all(|w| w[0].kind < w[1].kind));
    assert_eq!(m.open_escalations, 1);

    // Every claim waited 2 s and worked 10 s: bucket by bucket, cumulative.
    let counts = |h: &crate::metrics::Histogram| -> Vec<(f64, u64)> {
        h.buckets.iter().map(|b| (b.le_seconds, b.count)).collect()
    };
    assert_eq!(m.claim_wait.count, 9);
    assert!((m.claim_wait.sum_seconds - 18.0).abs() < 1e-6);
    let wait = counts(&m.claim_wait);
    assert!(
        wait.contains(&(1.0, 0)) && wait.contains(&(5.0, 9)),
        "{wait:?}"
    );
    assert_eq!(m.work_time.count, 9);
    assert!((m.work_time.sum_seconds - 90.0).abs() < 1e-6);
    let work = counts(&m.work_time);
    assert!(
        work.contains(&(5.0, 0)) && work.contains(&(15.0, 9)),
        "{work:?}"
    );

    // A lapse is counted as one, a retry and a revoked claim too; a started plan's steps by
    // their status.
    let h = store
        .create(NewHandoff::new("metrics", "goal").max_attempts(2))
        .unwrap();
    store.claim(&h.id, "worker", MINUTE).unwrap();
    clock.advance(Duration::from_secs(61));
    assert_eq!(store.reap().unwrap(), 1);
    // An operator retries a failed handoff, and takes its next claim away.
    store.retry(&ids[7], "operator", Some("try again")).unwrap();
    store.claim(&ids[7], "worker", MINUTE).unwrap();
    store.revoke_claim(&ids[7], "operator", "stuck").unwrap();
    let task = store.create_task(super::tasks::blog_task()).unwrap();
    store.start_task(&task.header.id).unwrap();
    let m = store.metrics().unwrap();
    let events = |kind: &str| m.events.iter().find(|e| e.kind == kind).map(|e| e.count);
    assert_eq!(events("lease_expired"), Some(1));
    assert_eq!(events("retried"), Some(1));
    assert_eq!(events("revoked"), Some(1));
    assert_eq!(events("claimed"), Some(11));
    let steps: Vec<(StepStatus, u64)> = m.steps.iter().map(|s| (s.status, s.count)).collect();
    assert_eq!(steps, [(StepStatus::Pending, 3), (StepStatus::Ready, 1)]);
    assert!(store.ready().is_ok());
}
