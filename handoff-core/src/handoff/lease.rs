//! Holding a claim while working on it (issue #19's helper every adapter needs): a [`Lease`]
//! has its claim renewed while the holder works, and settles it once:
//! completed with an outcome, failed with an error, or failed when the holder stops without
//! settling it (a panic, an early return), so that the work goes back to the queue at once
//! instead of when the lease lapses. Every face builds its own form on it: Python's `with
//! store.lease(claim):`, Node's `store.withLease(claim, fn)`.
//!
//! The heartbeats of every lease in the process come from one thread (started with the first
//! lease), which sleeps until the next one is due: a swarm's worker may hold many leases, and a
//! thread per lease cost its start and its stop on every claim.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::record::Handoff;
use crate::store::{ClaimRef, Store};

/// What a [`Lease`] says when its holder dropped it without settling the claim.
pub const DROPPED: &str = "the holder stopped without completing or failing its claim";

/// The shortest time between two heartbeats, whatever the lease.
const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// A claim held while its work runs: renewed every third of its lease until it is settled.
///
/// ```
/// use std::time::Duration;
/// use handoff_core::{NewHandoff, Status, Store};
///
/// let store = Store::memory();
/// let h = store.create(NewHandoff::new("t1", "Port the billing service"))?;
/// let claim = store.claim(&h.id, "gemini", Duration::from_secs(30))?;
/// let lease = store.lease(&claim)?;                // heartbeats from now on
/// // ... the work ...
/// assert_eq!(lease.complete("ported")?.status, Status::Completed);
/// # Ok::<(), handoff_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Lease {
    store: Store,
    claim: ClaimRef,
    lost: Arc<AtomicBool>,
    /// How many heartbeats renewed the claim.
    beats: Arc<AtomicU32>,
    /// Its place in the heartbeat schedule; `None` once settled.
    beating: Option<u64>,
}

impl Store {
    /// Holds `claim` while its work runs: it is renewed every third of its lease until
    /// [`Lease::complete`] or [`Lease::fail`] settles it; dropping the lease unsettled fails the
    /// claim ([`DROPPED`]).
    pub fn lease(&self, claim: impl Into<ClaimRef>) -> Result<Lease> {
        let claim = claim.into();
        let interval = (claim.lease / 3).max(MIN_INTERVAL);
        let lost = Arc::new(AtomicBool::new(false));
        let beats = Arc::new(AtomicU32::new(0));
        let beating = schedule().add(Beating {
            store: self.clone(),
            claim: claim.clone(),
            interval,
            lost: Arc::clone(&lost),
            beats: Arc::clone(&beats),
        })?;
        Ok(Lease {
            store: self.clone(),
            claim,
            lost,
            beats,
            beating: Some(beating),
        })
    }
}

/// One lease's heartbeats.
struct Beating {
    store: Store,
    claim: ClaimRef,
    interval: Duration,
    lost: Arc<AtomicBool>,
    beats: Arc<AtomicU32>,
}

/// Every lease's next heartbeat, and the thread that makes them.
struct Schedule {
    state: Mutex<Plan>,
    wake: Condvar,
}

#[derive(Default)]
struct Plan {
    /// When each lease is due next (entries of settled leases are skipped when they come up).
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    leases: HashMap<u64, Beating>,
    next_id: u64,
    started: bool,
}

fn schedule() -> &'static Schedule {
    static SCHEDULE: OnceLock<Schedule> = OnceLock::new();
    SCHEDULE.get_or_init(|| Schedule {
        state: Mutex::new(Plan::default()),
        wake: Condvar::new(),
    })
}

impl Schedule {
    fn plan(&self) -> MutexGuard<'_, Plan> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Schedules `beating`'s first heartbeat one interval from now; its id.
    fn add(&'static self, beating: Beating) -> Result<u64> {
        let mut plan = self.plan();
        if !plan.started {
            std::thread::Builder::new()
                .name("handoff-leases".into())
                .spawn(move || self.run())
                .map_err(|e| Error::storage(format!("cannot start the heartbeat thread: {e}")))?;
            plan.started = true;
        }
        let id = plan.next_id;
        plan.next_id += 1;
        plan.due
            .push(Reverse((Instant::now() + beating.interval, id)));
        plan.leases.insert(id, beating);
        self.wake.notify_all();
        Ok(id)
    }

    /// No more heartbeats for lease `id` (one already under way may still land: it comes
    /// before the settling that follows, or fails against the settled claim).
    fn remove(&self, id: u64) {
        self.plan().leases.remove(&id);
    }

    /// Sleeps until a heartbeat is due, makes the due ones (without holding the schedule, so
    /// that leases come and go meanwhile), and so on for the life of the process.
    fn run(&self) {
        let mut plan = self.plan();
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(Reverse((at, id))) = plan.due.peek().copied() {
                if at > now {
                    break;
                }
                plan.due.pop();
                let Plan {
                    due: queue, leases, ..
                } = &mut *plan;
                if let Some(b) = leases.get(&id) {
                    queue.push(Reverse((now + b.interval, id)));
                    due.push((
                        id,
                        b.store.clone(),
                        b.claim.clone(),
                        Arc::clone(&b.lost),
                        Arc::clone(&b.beats),
                    ));
                }
            }
            if due.is_empty() {
                plan = match plan.due.peek() {
                    Some(Reverse((at, _))) => {
                        let wait = at.saturating_duration_since(now);
                        self.wake
                            .wait_timeout(plan, wait)
                            .unwrap_or_else(|p| p.into_inner())
                            .0
                    }
                    None => self.wake.wait(plan).unwrap_or_else(|p| p.into_inner()),
                };
                continue;
            }
            drop(plan);
            for (id, store, claim, lost, beats) in due {
                // A storage error is tried again at the next beat; a claim that is gone is not.
                match store.heartbeat(claim) {
                    Ok(_) => {
                        beats.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(
                        Error::LeaseLost { .. }
                        | Error::InvalidTransition { .. }
                        | Error::NotFound { .. },
                    ) => {
                        lost.store(true, Ordering::SeqCst);
                        self.remove(id);
                    }
                    Err(_) => {}
                }
            }
            plan = self.plan();
        }
    }
}

impl Lease {
    /// The claim held.
    pub fn claim(&self) -> &ClaimRef {
        &self.claim
    }

    /// Whether a heartbeat found the claim gone (lapsed, taken over, settled elsewhere): the
    /// work should stop, since completing will fail with `LeaseLost`.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// How many heartbeats have renewed the claim so far.
    pub fn heartbeats(&self) -> u32 {
        self.beats.load(Ordering::SeqCst)
    }

    /// Reports how the work is going: a heartbeat carrying `progress` (a small JSON value),
    /// sent now. The record keeps it, operators see it, and the lease's own heartbeats after
    /// it leave it in place until the next report.
    pub fn progress(&self, progress: serde_json::Value) -> Result<Handoff> {
        let result = self
            .store
            .heartbeat_with(self.claim.clone(), Some(progress));
        if matches!(result, Err(Error::LeaseLost { .. })) {
            self.lost.store(true, Ordering::SeqCst);
        }
        result
    }

    /// Stops the heartbeats, then gives the handoff back with `reason` (pending again, one
    /// more attempt counted): work that did not fail but was not done (a holder stopped or
    /// timed out).
    pub fn release(mut self, reason: &str) -> Result<Handoff> {
        self.stop_beating();
        self.store.release(self.claim.clone(), reason)
    }

    /// Stops the heartbeats and leaves the claim as it is, for a holder that found it lost or
    /// settled by someone else: nothing is written.
    pub fn forget(mut self) {
        self.stop_beating();
    }

    /// Stops the heartbeats, then completes the claim with `outcome`. An outcome the store
    /// refuses (too long, say) fails the claim instead, so that it does not sit claimed until
    /// its lease lapses, and the refusal is returned.
    pub fn complete(mut self, outcome: &str) -> Result<Handoff> {
        self.stop_beating();
        let done = self.store.complete(self.claim.clone(), outcome);
        self.settle_refused(done, "the outcome was refused")
    }

    /// Stops the heartbeats, then fails the claim with `error` (retried if attempts are left).
    /// An error the store refuses (empty, too long) fails the claim with [`DROPPED`] instead,
    /// and the refusal is returned.
    pub fn fail(mut self, error: &str) -> Result<Handoff> {
        self.stop_beating();
        let done = self.store.fail(self.claim.clone(), error);
        self.settle_refused(done, DROPPED)
    }

    /// After a settling the store refused as bad input, fails the claim with `why` (and the
    /// refusal), then returns the refusal.
    fn settle_refused(&self, done: Result<Handoff>, why: &str) -> Result<Handoff> {
        match done {
            Err(refused @ Error::Validation { .. }) => {
                let error = format!("{why}: {refused}");
                let error: String = error.chars().take(1000).collect();
                let _ = self.store.fail(self.claim.clone(), &error);
                Err(refused)
            }
            done => done,
        }
    }

    fn stop_beating(&mut self) {
        if let Some(id) = self.beating.take() {
            schedule().remove(id);
        }
    }
}

impl Drop for Lease {
    /// Dropped unsettled (a panic, an early return): the claim is failed, so that the work
    /// goes back to the queue now rather than when the lease lapses.
    fn drop(&mut self) {
        if self.beating.is_some() {
            self.stop_beating();
            let _ = self.store.fail(self.claim.clone(), DROPPED);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Instant;

    use super::*;
    use crate::clock::ManualClock;
    use crate::machine::Change;
    use crate::record::{NewHandoff, Status};

    /// Waits (for a minute at most: a liveness bound, not a timing claim) until `done`.
    fn until(mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "gave up waiting");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn beats(store: &Store, id: &str) -> usize {
        let events = store.events(Some(id)).unwrap();
        events
            .iter()
            .filter(|e| matches!(e.change, Change::Heartbeat { .. }))
            .count()
    }

    #[test]
    fn a_lease_heartbeats_until_settled_and_fails_when_dropped() {
        // The store's clock stands still: only the heartbeats move it.
        let store = Store::memory().with_clock(Arc::new(ManualClock::new(chrono::Utc::now())));
        let lease_time = Duration::from_millis(30);
        let h = store.create(NewHandoff::new("t1", "work")).unwrap();
        let lease = store
            .lease(&store.claim(&h.id, "a", lease_time).unwrap())
            .unwrap();
        until(|| beats(&store, &h.id) >= 2);
        assert!(!lease.is_lost());
        assert_eq!(lease.complete("done").unwrap().status, Status::Completed);
        let after = beats(&store, &h.id);
        std::thread::sleep(lease_time);
        assert_eq!(beats(&store, &h.id), after, "no heartbeat after settling");

        let h = store.create(NewHandoff::new("t1", "more work")).unwrap();
        let lease = store
            .lease(&store.claim(&h.id, "a", lease_time).unwrap())
            .unwrap();
        drop(lease);
        let back = store.get(&h.id).unwrap();
        assert_eq!(
            back.status,
            Status::Pending,
            "dropped unsettled: back in the queue"
        );
        let failed = store.events(Some(&h.id)).unwrap();
        assert!(matches!(&failed.last().unwrap().change,
                         Change::AttemptFailed { error, .. } if error == DROPPED));
    }

    #[test]
    fn a_lease_reports_progress_that_its_heartbeats_keep() {
        let store = Store::memory().with_clock(Arc::new(ManualClock::new(chrono::Utc::now())));
        let h = store.create(NewHandoff::new("t1", "work")).unwrap();
        let lease = store
            .lease(&store.claim(&h.id, "a", Duration::from_millis(30)).unwrap())
            .unwrap();
        let progress = serde_json::json!({"done": 2, "of": 5});
        assert_eq!(
            lease.progress(progress.clone()).unwrap().progress,
            Some(progress.clone())
        );
        let reported = beats(&store, &h.id);
        until(|| beats(&store, &h.id) >= reported + 2);
        assert_eq!(store.get(&h.id).unwrap().progress, Some(progress));
        let too_big = serde_json::json!("x".repeat(5000));
        assert_eq!(
            lease.progress(too_big).unwrap_err().problems()[0].field,
            "progress"
        );
        assert!(!lease.is_lost());
        lease.complete("done").unwrap();
    }

    #[test]
    fn a_refused_outcome_sends_the_work_back_rather_than_leaving_it_claimed() {
        let store = Store::memory().with_clock(Arc::new(ManualClock::new(chrono::Utc::now())));
        let h = store.create(NewHandoff::new("t1", "work")).unwrap();
        let lease = store
            .lease(&store.claim(&h.id, "a", Duration::from_secs(30)).unwrap())
            .unwrap();
        let huge = "x".repeat(store.limits().max_field_bytes + 1);
        let refused = lease.complete(&huge).unwrap_err();
        assert_eq!(refused.problems()[0].field, "outcome");
        assert_eq!(store.get(&h.id).unwrap().status, Status::Pending);
    }

    #[test]
    fn a_lease_says_when_its_claim_is_gone() {
        let store = Store::memory().with_clock(Arc::new(ManualClock::new(chrono::Utc::now())));
        let h = store
            .create(NewHandoff::new("t1", "work").from_agent("boss"))
            .unwrap();
        let claim = store.claim(&h.id, "a", Duration::from_millis(30)).unwrap();
        let lease = store.lease(&claim).unwrap();
        store.cancel(&h.id, "boss", None).unwrap();
        until(|| lease.is_lost());
        assert_eq!(
            lease.complete("done").unwrap_err().kind(),
            crate::ErrorKind::LeaseLost
        );
    }
}
