//! [`Lease`]: a claim held while its work runs (issue #19), the core's `store::Lease` as a
//! uniffi object. The core renews the claim from a thread of its own every third of its lease
//! until the lease is completed or failed, and fails the claim when the lease goes away
//! unsettled; this binding holds the core's lease until it is settled, so that settling twice or
//! after settling is an error of the host language rather than a panic.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use handoff_core as core;
use handoff_core::ops;

use crate::arguments::{self, arguments};
use crate::claim::ClaimRef;
use crate::error::{HandoffError, Result};
use crate::record::Handoff;

/// A claim held while its work runs: from `Store.lease(claim)` on, the claim is renewed every
/// third of its lease (from a thread of the library's own, whatever the host's threads do) until
/// `complete` or `fail` settles it, once. `isLost()` says when a heartbeat found the claim gone
/// (its lease lapsed, it was cancelled, taken over or settled elsewhere): stop the work, since
/// `complete` will fail with `LeaseLost`.
///
/// A lease that goes away unsettled fails its claim with the error text "the holder stopped
/// without completing or failing its claim" (`handoff_core::store::DROPPED`), so that the work
/// goes back to the queue (or fails, after its last attempt) at once rather than when the lease
/// lapses. It goes away when it is closed (Kotlin `close()`, which `use { }` calls on the way
/// out, a thrown exception included) or released (Swift `deinit`, Python's last reference);
/// closing a settled lease does nothing. Settling again, or after a settle that threw, is
/// `Validation` on `lease` and changes nothing.
///
/// Kotlin:
///
/// ```kotlin
/// store.lease(claim.reference()).use { lease ->
///     val result = work()                       // throws: `use` closes the lease, failing the claim
///     lease.complete(result)
/// }
/// ```
///
/// Swift (release happens at the last use, which may come before the end of the scope: settle
/// the lease, or keep it with `withExtendedLifetime`):
///
/// ```swift
/// let lease = try store.lease(claim: claim.reference())
/// do {
///     _ = try lease.complete(outcome: try work())
/// } catch {
///     _ = try? lease.fail(error: String(describing: error))   // its text rather than DROPPED's
///     throw error
/// }
/// ```
#[derive(Debug, uniffi::Object)]
pub struct Lease {
    claim: ClaimRef,
    /// The core's lease until it is settled: `complete` and `fail` consume it.
    held: Mutex<Option<core::store::Lease>>,
    /// What the heartbeats had found when the lease was settled (written under `held`'s lock).
    lost_when_settled: AtomicBool,
}

impl Lease {
    /// Holds `claim` in `store`: the claim is read as `heartbeat` reads it (a malformed secret is
    /// `Validation` on `secret`, a zero lease on `lease`), then the core's lease starts.
    pub(crate) fn start(store: &core::Store, claim: ClaimRef) -> Result<Arc<Lease>> {
        let read: ops::HeartbeatArgs = arguments::read_for(store, &arguments! { claim: &claim })?;
        let lease = store.lease(read.claim.into_ref()?)?;
        Ok(Arc::new(Lease {
            claim,
            held: Mutex::new(Some(lease)),
            lost_when_settled: AtomicBool::new(false),
        }))
    }

    fn held(&self) -> MutexGuard<'_, Option<core::store::Lease>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The core's lease, taken out to be settled: the lock is not held while the heartbeat
    /// thread stops and the store writes, so `is_lost` and `claim` answer meanwhile and a second
    /// settle is refused at once.
    fn take(&self) -> Result<core::store::Lease> {
        let mut held = self.held();
        let lease = held.take().ok_or_else(settled)?;
        self.lost_when_settled
            .store(lease.is_lost(), Ordering::SeqCst);
        Ok(lease)
    }
}

#[uniffi::export]
impl Lease {
    /// Stops the heartbeats, then completes the claim with `outcome` (as `Store.complete`:
    /// `LeaseLost` when the claim is no longer current). The lease is settled either way:
    /// after an error, settle the claim with `Store` and `claim()` if it is still current.
    #[uniffi::method(default(outcome = ""))]
    pub fn complete(&self, outcome: String) -> Result<Handoff> {
        Ok(self.take()?.complete(&outcome)?)
    }

    /// Stops the heartbeats, then fails the claim with `error` (as `Store.fail`: pending again
    /// while attempts are left, else failed). The lease is settled either way.
    pub fn fail(&self, error: String) -> Result<Handoff> {
        Ok(self.take()?.fail(&error)?)
    }

    /// Whether a heartbeat found the claim gone (its lease lapsed, it was cancelled, taken over
    /// or settled elsewhere): the work should stop, since `complete` will fail with
    /// `LeaseLost`. Once the lease is settled, what the heartbeats had found by then.
    pub fn is_lost(&self) -> bool {
        match &*self.held() {
            Some(lease) => lease.is_lost(),
            None => self.lost_when_settled.load(Ordering::SeqCst),
        }
    }

    /// The claim held: to hand on, or to settle the claim with `Store` after a settle that
    /// threw (a `Busy` store) if it is still current.
    pub fn claim(&self) -> ClaimRef {
        self.claim.clone()
    }
}

fn settled() -> HandoffError {
    // The rule as the Python binding words it.
    HandoffError::invalid("lease", "was completed or failed already")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::record::{CreateOptions, HandoffStatus};
    use crate::store::{OpenOptions, Store};

    fn store() -> Arc<Store> {
        Store::memory(OpenOptions {
            clock: Some(ManualClock::new(None).unwrap()),
            ..OpenOptions::default()
        })
        .unwrap()
    }

    fn claimed(store: &Store) -> ClaimRef {
        let h = store
            .create(CreateOptions {
                task_id: "t1".into(),
                goal: "work".into(),
                ..CreateOptions::default()
            })
            .unwrap();
        store
            .claim(h.id, "a".into(), Some(Duration::from_secs(60)))
            .unwrap()
            .reference()
    }

    fn is_settled(error: HandoffError) -> bool {
        matches!(error, HandoffError::Validation { problems, .. }
                 if problems.len() == 1 && problems[0].field == "lease")
    }

    #[test]
    fn a_lease_settles_once() {
        let store = store();
        let lease = store.lease(claimed(&store)).unwrap();
        let done = lease.complete("done".into()).unwrap();
        assert_eq!(done.status, HandoffStatus::Completed);
        assert!(is_settled(lease.complete("again".into()).unwrap_err()));
        assert!(is_settled(lease.fail("late".into()).unwrap_err()));
        assert!(!lease.is_lost());
        assert_eq!(lease.claim().handoff_id, done.id);
        drop(lease);
        assert_eq!(store.get(done.id).unwrap().status, HandoffStatus::Completed);
    }

    #[test]
    fn a_lease_dropped_unsettled_fails_its_claim() {
        let store = store();
        let claim = claimed(&store);
        drop(store.lease(claim.clone()).unwrap());
        assert_eq!(
            store.get(claim.handoff_id.clone()).unwrap().status,
            HandoffStatus::Pending
        );
        let events = store
            .events(Some(claim.handoff_id), None, None, None, true)
            .unwrap();
        assert!(matches!(&events.last().unwrap().change,
                         crate::events::Change::AttemptFailed { error, .. }
                         if error == core::store::DROPPED));
    }

    #[test]
    fn a_claim_is_read_as_heartbeat_reads_it() {
        let store = store();
        let mut claim = claimed(&store);
        claim.secret = "hcs_".into();
        claim.lease = Duration::ZERO;
        let Err(HandoffError::Validation { problems, .. }) = store.lease(claim.clone()) else {
            panic!("a malformed claim is refused");
        };
        let fields: Vec<_> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["secret", "lease"]);
        let events = store
            .events(Some(claim.handoff_id), None, None, None, true)
            .unwrap();
        assert_eq!(events.len(), 2, "created and claimed, nothing else");
    }
}
