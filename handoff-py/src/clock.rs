//! `handoff_core.ManualClock`: a clock that moves only when told to, for tests and simulations.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use handoff_core as core;
use pyo3::prelude::*;

use crate::convert::Args;
use crate::errors::Result;

/// A clock that moves only when told to. Give it to `open(...)` or `Store.memory(...)` as
/// `clock=` to drive leases, expiry and `stalled` without sleeping.
#[pyclass(module = "handoff_core", name = "ManualClock", frozen)]
pub struct ManualClock {
    inner: Arc<core::ManualClock>,
}

impl ManualClock {
    pub(crate) fn shared(&self) -> Arc<dyn core::Clock> {
        self.inner.clone()
    }
}

#[pymethods]
impl ManualClock {
    /// A clock standing at `start` (an aware `datetime`), or at 2026-01-01T00:00:00Z.
    #[new]
    #[pyo3(signature = (start=None))]
    fn py_new(start: Option<&Bound<'_, PyAny>>) -> Result<ManualClock> {
        let mut args = Args::new();
        let start = args.opt_time("start", start);
        args.finish()?;
        let clock = match start {
            Some(at) => core::ManualClock::new(at),
            None => core::ManualClock::at_epoch(),
        };
        Ok(ManualClock {
            inner: Arc::new(clock),
        })
    }

    /// The clock's time.
    fn now(&self) -> DateTime<Utc> {
        core::Clock::now(&*self.inner)
    }

    /// Moves the clock forward by `seconds` (at least 0).
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> Result<()> {
        let mut args = Args::new();
        let by = args.duration("seconds", seconds);
        args.finish()?;
        self.inner.advance(by);
        Ok(())
    }

    /// Sets the clock to `at` (an aware `datetime`).
    fn set(&self, at: &Bound<'_, PyAny>) -> Result<()> {
        let mut args = Args::new();
        if at.is_none() {
            args.problem("at", "must be a datetime, not None");
        }
        let at = args.opt_time("at", Some(at));
        args.finish()?;
        if let Some(at) = at {
            self.inner.set(at);
        }
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "ManualClock({})",
            core::clock::to_text(&core::Clock::now(&*self.inner))
        )
    }
}
