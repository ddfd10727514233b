//! What an operator's dashboard and a Prometheus scrape read: how many handoffs are in each
//! status, how many events of each kind the log holds, how long work waits for a claim and how
//! long a claim takes to settle, the open escalations and the task steps by status.
//!
//! Everything is computed from the store, never counted in a process, so several servers over
//! one PostgreSQL database report the same numbers, and a restart loses nothing. A counter
//! (events of a kind) can still go down: pruning removes old handoffs with their events.
//!
//! The folder: this file holds the result and how it is tallied (the pure part); `store`
//! computes it from a [`Backend`](crate::store::Backend) (through the trait, or one SQL
//! statement on the SQL backends); `ops` holds the `metrics` operation.

pub(crate) mod ops;
pub(crate) mod store;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::store::QueueCount;
use crate::task::StepStatus;

/// The upper bounds of the histograms' buckets, in seconds: fixed, so that every server and
/// every scrape bucket alike (from a tenth of a second to a day; `+Inf` above).
pub const BUCKETS_SECONDS: [f64; 14] = [
    0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
];

/// The event kinds always reported, with 0 before the first one happens: a Prometheus series
/// that appears only with its first event cannot be rated over the scrape before.
pub const REPORTED_KINDS: [&str; 8] = [
    "created",
    "claimed",
    "completed",
    "attempt_failed",
    "failed",
    "retried",
    "revoked",
    "lease_expired",
];

/// The state of the store at a glance, for operators and their monitoring.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Metrics {
    /// How many handoffs are in each status, per addressee (checkpoints left out), in status
    /// then agent order.
    pub handoffs: Vec<QueueCount>,
    /// How many events of each kind the log holds (`created`, `claimed`, `completed`,
    /// `failed`, `retried`, `revoked`, `lease_expired`, ... : the kinds of `events`), in kind
    /// order; the usual kinds are listed with 0 before they first happen.
    pub events: Vec<EventCount>,
    /// From a handoff's creation to its first claim, over the handoffs claimed at least once.
    pub claim_wait: Histogram,
    /// From a claim to its settling by the holder (completed, failed, released), over every
    /// claim settled so.
    pub work_time: Histogram,
    /// Escalation handoffs still pending or claimed: decisions someone waits for.
    pub open_escalations: u64,
    /// How many task steps are in each status, in status order (statuses with none left out).
    pub steps: Vec<StepCount>,
}

/// How many events of one kind the log holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct EventCount {
    /// The event kind, as `events` names it.
    pub kind: String,
    /// How many.
    pub count: u64,
}

/// How many task steps are in one status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct StepCount {
    /// The status.
    pub status: StepStatus,
    /// How many.
    pub count: u64,
}

/// Durations counted into the fixed buckets of [`BUCKETS_SECONDS`], Prometheus's way: each
/// bucket counts the durations at most its bound (so the counts grow bucket by bucket), and
/// `count` is every duration (the `+Inf` bucket).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Histogram {
    /// One per bound of [`BUCKETS_SECONDS`], in order.
    pub buckets: Vec<Bucket>,
    /// How many durations.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
}

/// One bucket of a [`Histogram`].
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Bucket {
    /// The bucket's upper bound, in seconds.
    pub le_seconds: f64,
    /// How many durations were at most this long.
    pub count: u64,
}

/// The bucket a duration of `micros` microseconds falls in: the index of the first bound it
/// does not pass, [`BUCKETS_SECONDS`]`.len()` above them all.
pub(crate) fn bucket_of(micros: i64) -> usize {
    BUCKETS_SECONDS
        .iter()
        .position(|&bound| micros <= bound_micros(bound))
        .unwrap_or(BUCKETS_SECONDS.len())
}

/// A bound in whole microseconds, the unit the stores keep times in.
pub(crate) fn bound_micros(seconds: f64) -> i64 {
    (seconds * 1_000_000.0).round() as i64
}

/// Durations gathered bucket by bucket (not yet cumulative).
#[derive(Default)]
struct Durations {
    per_bucket: [u64; BUCKETS_SECONDS.len() + 1],
    sum_micros: i128,
}

impl Durations {
    fn add(&mut self, bucket: usize, count: u64, sum_micros: i64) {
        if let Some(slot) = self.per_bucket.get_mut(bucket) {
            *slot += count;
        }
        self.sum_micros += i128::from(sum_micros);
    }

    fn finish(self) -> Histogram {
        let mut running = 0;
        let buckets = BUCKETS_SECONDS
            .iter()
            .zip(self.per_bucket)
            .map(|(&le_seconds, n)| {
                running += n;
                Bucket {
                    le_seconds,
                    count: running,
                }
            })
            .collect();
        Histogram {
            buckets,
            count: self.per_bucket.iter().sum(),
            sum_seconds: self.sum_micros as f64 / 1_000_000.0,
        }
    }
}

/// The metrics gathered piece by piece, from whatever a backend reads: memory grows with the
/// kinds, statuses and agents, never with the records.
#[derive(Default)]
pub(crate) struct Tally {
    handoffs: BTreeMap<(String, Option<String>), u64>,
    events: BTreeMap<String, u64>,
    claim_wait: Durations,
    work_time: Durations,
    open_escalations: u64,
    steps: BTreeMap<String, u64>,
}

impl Tally {
    /// `count` handoffs in `status` addressed to `to_agent`.
    pub(crate) fn handoffs(&mut self, status: &str, to_agent: Option<String>, count: u64) {
        *self
            .handoffs
            .entry((status.to_owned(), to_agent))
            .or_default() += count;
    }

    /// `count` events of `kind`.
    pub(crate) fn events(&mut self, kind: &str, count: u64) {
        *self.events.entry(kind.to_owned()).or_default() += count;
    }

    /// `count` claim waits in `bucket` (see [`bucket_of`]), lasting `sum_micros` in all.
    pub(crate) fn claim_wait(&mut self, bucket: usize, count: u64, sum_micros: i64) {
        self.claim_wait.add(bucket, count, sum_micros);
    }

    /// `count` settled claims in `bucket`, lasting `sum_micros` in all.
    pub(crate) fn work_time(&mut self, bucket: usize, count: u64, sum_micros: i64) {
        self.work_time.add(bucket, count, sum_micros);
    }

    /// `count` open escalations.
    pub(crate) fn open_escalations(&mut self, count: u64) {
        self.open_escalations += count;
    }

    /// `count` steps in `status` (its wire name).
    pub(crate) fn steps(&mut self, status: &str, count: u64) {
        *self.steps.entry(status.to_owned()).or_default() += count;
    }

    pub(crate) fn finish(mut self) -> Metrics {
        for kind in REPORTED_KINDS {
            self.events.entry(kind.to_owned()).or_default();
        }
        let mut steps: Vec<StepCount> = self
            .steps
            .into_iter()
            // A step document always has a status the core wrote; one that does not read is
            // left to `check`, not reported as a status of its own.
            .filter_map(|(status, count)| {
                let status = serde_json::from_value(serde_json::Value::String(status)).ok()?;
                Some(StepCount { status, count })
            })
            .collect();
        steps.sort_by_key(|s| s.status as u8);
        Metrics {
            handoffs: QueueCount::from_tally(self.handoffs),
            events: self
                .events
                .into_iter()
                .map(|(kind, count)| EventCount { kind, count })
                .collect(),
            claim_wait: self.claim_wait.finish(),
            work_time: self.work_time.finish(),
            open_escalations: self.open_escalations,
            steps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_fall_in_the_first_bucket_they_do_not_pass() {
        assert_eq!(bucket_of(-5), 0, "a clock that went back counts as no wait");
        assert_eq!(bucket_of(100_000), 0, "a bound is in its own bucket");
        assert_eq!(bucket_of(100_001), 1);
        assert_eq!(bucket_of(86_400_000_000), BUCKETS_SECONDS.len() - 1);
        assert_eq!(bucket_of(i64::MAX), BUCKETS_SECONDS.len(), "+Inf");
    }

    #[test]
    fn histograms_are_cumulative_and_count_everything() {
        let mut tally = Tally::default();
        tally.claim_wait(0, 2, 100_000);
        tally.claim_wait(2, 1, 1_000_000);
        tally.claim_wait(BUCKETS_SECONDS.len(), 1, 100_000_000_000);
        let m = tally.finish();
        let counts: Vec<u64> = m.claim_wait.buckets.iter().map(|b| b.count).collect();
        assert_eq!(&counts[..4], [2, 2, 3, 3]);
        assert_eq!(counts.last(), Some(&3), "the +Inf one only in `count`");
        assert_eq!(m.claim_wait.count, 4);
        assert!((m.claim_wait.sum_seconds - 100_001.1).abs() < 1e-6);
        assert!(
            m.events
                .iter()
                .any(|e| e.kind == "lease_expired" && e.count == 0)
        );
    }
}
