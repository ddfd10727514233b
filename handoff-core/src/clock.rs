//! Time, read only through a [`Clock`] so that every state machine is a pure function of its
//! inputs and tests never sleep.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, TimeDelta, Utc};

pub(crate) mod rfc3339;

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, in UTC, at microsecond precision (what every binding and the stores can carry).
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        truncate_to_micros(Utc::now())
    }
}

/// A clock that moves only when told to: for tests and simulations.
#[derive(Debug)]
pub struct ManualClock {
    micros: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            micros: AtomicI64::new(start.timestamp_micros()),
        }
    }

    /// A clock standing at 2026-01-01T00:00:00Z.
    pub fn at_epoch() -> Self {
        ManualClock::new(from_micros(1_767_225_600_000_000))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: std::time::Duration) {
        let micros = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        // Saturating: a huge step stops at the end of time instead of wrapping into the past.
        let _ = self
            .micros
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(micros))
            });
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        self.micros.store(at.timestamp_micros(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        from_micros(self.micros.load(Ordering::SeqCst))
    }
}

/// A time as the library writes it everywhere (JSON, the bindings' strings):
/// `2026-01-01T00:00:00.123456Z`, RFC 3339 in UTC with the fraction always in six digits, so
/// that times sort as text in time order.
pub fn to_text(at: &DateTime<Utc>) -> String {
    rfc3339::text(at)
}

/// How the stores keep a time: microseconds since the Unix epoch.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// [`micros`] of a time that may be absent.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn opt_micros(at: Option<DateTime<Utc>>) -> Option<i64> {
    at.map(micros)
}

/// The instant `micros` microseconds after the Unix epoch, clamped to chrono's range.
pub(crate) fn from_micros(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn truncate_to_micros(at: DateTime<Utc>) -> DateTime<Utc> {
    from_micros(at.timestamp_micros())
}

/// The longest lease a claim may ask for.
pub const MAX_LEASE: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

/// Converts a lease to a time span, refusing zero and anything over [`MAX_LEASE`].
pub(crate) fn lease_delta(field: &str, lease: std::time::Duration) -> crate::Result<TimeDelta> {
    if lease.is_zero() || lease > MAX_LEASE {
        return Err(crate::Error::invalid(
            field,
            format!(
                "must be more than 0 and at most {} seconds",
                MAX_LEASE.as_secs()
            ),
        ));
    }
    TimeDelta::from_std(lease).map_err(|_| crate::Error::invalid(field, "out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_step_stops_at_the_end_of_time() {
        let clock = ManualClock::at_epoch();
        let start = clock.now();
        clock.advance(std::time::Duration::MAX);
        assert!(clock.now() > start);
        clock.advance(std::time::Duration::from_secs(1));
        assert!(clock.now() > start, "the clock wrapped into the past");
    }
}
