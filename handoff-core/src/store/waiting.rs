//! What a face does for a caller that may leave: a wait for work that looks between slices
//! whether its caller still wants it, and a claim given back when its caller left before
//! receiving it. Python (Ctrl-C), the MCP server (a cancelled call) and `handoff serve` (a
//! stopping server, a dropped request) each had their own copy.

use std::time::{Duration, Instant};

use super::{Claim, ClaimRef, Store};
use crate::error::Result;
use crate::ops::{ClaimNext, ClaimNextArgs, Operation};
use crate::record::Handoff;

impl Store {
    /// `claim_next` with its `wait_seconds` waited out a `slice` at a time (the store's own
    /// wait, woken by new work, within each slice), asking `stop` between slices whether the
    /// caller still wants it: once `stop` says yes, the wait ends with nothing, and nothing is
    /// claimed after it. A claim made in the slice `stop` was asked after is returned: the
    /// caller decides whether it was received ([`Store::give_back`] if not).
    ///
    /// A `wait_seconds` too long to count waits until `stop`; a `slice` of zero is taken as a
    /// millisecond, so that the loop always sleeps.
    pub fn claim_next_waiting(
        &self,
        mut args: ClaimNextArgs,
        slice: Duration,
        stop: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Claim>> {
        let wait = args
            .wait_seconds
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        // A wait that is not a duration is the operation's to report (by its argument name).
        let Some(wait) = wait.filter(|w| !w.is_zero()) else {
            return ClaimNext::run(self, args);
        };
        let slice = slice.max(Duration::from_millis(1));
        let deadline = Instant::now().checked_add(wait);
        loop {
            let left = deadline.map_or(Duration::MAX, |at| {
                at.saturating_duration_since(Instant::now())
            });
            let this = left.min(slice);
            args.wait_seconds = Some(this.as_secs_f64());
            let claim = ClaimNext::run(self, args.clone())?;
            if claim.is_some() || this >= left || stop() {
                return Ok(claim);
            }
        }
    }

    /// Gives back a claim whose caller was gone before it received it (a cancelled call, a
    /// dropped request, an interrupted task): released with [`Claim::UNRECEIVED`], so that the
    /// work is claimable again at once instead of when the lease lapses.
    pub fn give_back(&self, claim: impl Into<ClaimRef>) -> Result<Handoff> {
        self.release(claim, Claim::UNRECEIVED)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::cell::Cell;

    use super::*;
    use crate::record::{NewHandoff, Status};

    fn args(wait_seconds: f64) -> ClaimNextArgs {
        ClaimNextArgs {
            agent: "worker".into(),
            task_id: None,
            lease_seconds: None,
            wait_seconds: Some(wait_seconds),
        }
    }

    #[test]
    fn a_wait_ends_when_its_caller_stops_and_claims_what_is_there() {
        let store = Store::memory();
        let asked = Cell::new(0);
        let started = Instant::now();
        // An hour's wait, stopped after the second slice.
        let mut stop = || {
            asked.set(asked.get() + 1);
            asked.get() >= 2
        };
        let none = store
            .claim_next_waiting(args(3600.0), Duration::from_millis(10), &mut stop)
            .unwrap();
        assert!(none.is_none());
        assert_eq!(asked.get(), 2);
        assert!(started.elapsed() < Duration::from_secs(60), "stopped early");

        let h = store.create(NewHandoff::new("t1", "work")).unwrap();
        let claim = store
            .claim_next_waiting(args(3600.0), Duration::from_millis(10), &mut || true)
            .unwrap()
            .unwrap();
        assert_eq!(claim.handoff.id, h.id);
        let back = store.give_back(&claim).unwrap();
        assert_eq!(back.status, Status::Pending);
        let events = store.events(Some(&h.id)).unwrap();
        let released = serde_json::to_value(&events.last().unwrap().change).unwrap();
        assert_eq!(
            released["detail"]["reason"],
            Claim::UNRECEIVED,
            "{released}"
        );
    }

    #[test]
    fn a_bad_wait_is_reported_by_the_operation() {
        let store = Store::memory();
        let err = store
            .claim_next_waiting(args(-1.0), Duration::from_millis(10), &mut || false)
            .unwrap_err();
        assert_eq!(err.problems()[0].field, "wait_seconds");
    }
}
