//! Holding a claim while working on it (issue #19's helper every adapter needs): a [`Lease`]
//! renews the claim from a thread of its own while the holder works, and settles it once:
//! completed with an outcome, failed with an error, or failed when the holder stops without
//! settling it (a panic, an early return), so that the work goes back to the queue at once
//! instead of when the lease lapses. Every face builds its own form on it: Python's `with
//! store.lease(claim):`, Node's `store.withLease(claim, fn)`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{ClaimRef, Store};
use crate::error::{Error, Result};
use crate::record::Handoff;

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
    stop: Arc<(Mutex<bool>, Condvar)>,
    beating: Option<JoinHandle<()>>,
}

impl Store {
    /// Holds `claim` while its work runs: a thread renews it every third of its lease until
    /// [`Lease::complete`] or [`Lease::fail`] settles it; dropping the lease unsettled fails the
    /// claim ([`DROPPED`]).
    pub fn lease(&self, claim: impl Into<ClaimRef>) -> Result<Lease> {
        let claim = claim.into();
        let interval = (claim.lease / 3).max(MIN_INTERVAL);
        let lost = Arc::new(AtomicBool::new(false));
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let beating = {
            let (store, claim, lost, stop) = (
                self.clone(),
                claim.clone(),
                Arc::clone(&lost),
                Arc::clone(&stop),
            );
            std::thread::Builder::new()
                .name("handoff-lease".into())
                .spawn(move || beat(&store, &claim, interval, &lost, &stop))
                .map_err(|e| Error::storage(format!("cannot start the heartbeat thread: {e}")))?
        };
        Ok(Lease {
            store: self.clone(),
            claim,
            lost,
            stop,
            beating: Some(beating),
        })
    }
}

/// Renews `claim` every `interval` until told to stop, or until the claim is lost (a storage
/// error is tried again at the next beat).
fn beat(
    store: &Store,
    claim: &ClaimRef,
    interval: Duration,
    lost: &AtomicBool,
    stop: &(Mutex<bool>, Condvar),
) {
    let (stopped, wake) = stop;
    loop {
        {
            // Checked before waiting too: a stop that came first ends the thread at once. The
            // lock is not held while the heartbeat writes.
            let guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
            let (guard, _) = wake
                .wait_timeout_while(guard, interval, |stopped| !*stopped)
                .unwrap_or_else(|p| p.into_inner());
            if *guard {
                return;
            }
        }
        if let Err(err) = store.heartbeat(claim.clone())
            && matches!(
                err,
                Error::LeaseLost { .. } | Error::InvalidTransition { .. } | Error::NotFound { .. }
            )
        {
            lost.store(true, Ordering::SeqCst);
            return;
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
        let Some(beating) = self.beating.take() else {
            return;
        };
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        // The thread only waits and heartbeats: it ends within one heartbeat.
        let _ = beating.join();
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
        // The store's clock stands still: only the heartbeats' own thread moves.
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
