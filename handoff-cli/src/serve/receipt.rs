//! A claim on its way from the blocking thread that made it to the request it was made for.
//!
//! When a client disconnects, its request is dropped while the store call it started runs on
//! (a blocking thread cannot be stopped): a claim that call makes would be held by nobody
//! until its lease lapsed, the work delayed by a lease and an attempt counted. The claim is
//! given back instead, by whichever side learns last that the other is done.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use handoff_core::{Claim, ClaimRef, Store};

use super::App;

/// Held by a request while a call that may claim runs for it; dropping it says the request is
/// gone, and gives back a claim that reached it unreceived.
pub(super) struct Receipt {
    app: Arc<App>,
    state: Handover,
}

/// The blocking thread's side of a [`Receipt`].
#[derive(Clone, Default)]
pub(super) struct Handover(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// The request is gone: nothing will receive a claim.
    gone: bool,
    /// A claim made for the request and not yet received by it.
    claim: Option<ClaimRef>,
}

impl Handover {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the request is gone: a waiting call stops waiting.
    pub(super) fn gone(&self) -> bool {
        self.state().gone
    }

    /// Offers the claim a call made (on the blocking thread): whether the request is still
    /// there to receive it. If it is not, the claim is given back here.
    pub(super) fn offer(&self, store: &Store, claim: &Claim) -> bool {
        let gone = {
            let mut state = self.state();
            if !state.gone {
                state.claim = Some(claim.reference());
            }
            state.gone
        };
        if gone {
            release(store, claim.reference());
        }
        !gone
    }
}

impl Receipt {
    pub(super) fn new(app: &Arc<App>) -> Receipt {
        Receipt {
            app: Arc::clone(app),
            state: Handover::default(),
        }
    }

    /// What the blocking call offers its claim to.
    pub(super) fn handover(&self) -> Handover {
        self.state.clone()
    }

    /// The request has its answer: the claim in it is the client's now.
    pub(super) fn received(&self) {
        self.state.state().claim = None;
    }
}

impl Drop for Receipt {
    fn drop(&mut self) {
        let unreceived = {
            let mut state = self.state.state();
            state.gone = true;
            state.claim.take()
        };
        let Some(claim) = unreceived else {
            return;
        };
        let app = Arc::clone(&self.app);
        let give_back = move || release(&app.store, claim);
        // A request is dropped on the async threads, where a store call must not block.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(give_back)),
            Err(_) => give_back(),
        }
    }
}

/// Gives back a claim nobody received. If that fails (its lease already lapsed, the store is
/// unreachable), the claim lapses as any abandoned claim does: nobody is left to tell.
fn release(store: &Store, claim: ClaimRef) {
    let _ = store.give_back(claim);
}
