//! [`ManualClock`]: time that moves only when a test says so.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use handoff_core as core;

use crate::error::Result;
use crate::record::{time, utc};

/// A clock that moves only when told to. Give it to a store through `OpenOptions.clock` to
/// drive leases, expiry and `stalled` without waiting.
#[derive(Debug, uniffi::Object)]
pub struct ManualClock {
    inner: Arc<core::ManualClock>,
}

#[uniffi::export]
impl ManualClock {
    /// A clock standing at `start`, or at 2026-01-01T00:00:00Z.
    #[uniffi::constructor(default(start = None))]
    pub fn new(start: Option<SystemTime>) -> Result<Arc<ManualClock>> {
        let clock = match start {
            Some(at) => core::ManualClock::new(utc("start", at)?),
            None => core::ManualClock::at_epoch(),
        };
        Ok(Arc::new(ManualClock {
            inner: Arc::new(clock),
        }))
    }

    /// The clock's time.
    pub fn now(&self) -> SystemTime {
        time(core::Clock::now(&*self.inner))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.inner.advance(by);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: SystemTime) -> Result<()> {
        self.inner.set(utc("at", at)?);
        Ok(())
    }
}

impl ManualClock {
    /// The core clock, to hand to a store.
    pub(crate) fn core(&self) -> Arc<dyn core::Clock> {
        self.inner.clone()
    }
}
