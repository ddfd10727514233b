//! Path statistics: how hand-offs between each pair of agents fare, from the event log.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::Status;

/// How the hand-offs from one agent to another fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct PathStats {
    /// The agent handing over (`*` when unnamed).
    pub from_agent: String,
    /// The agent taking over: the addressee, or whoever claimed an open hand-off (`*` while
    /// nobody has).
    pub to_agent: String,
    /// Hand-offs on this path.
    pub total: u64,
    /// Of which completed.
    pub completed: u64,
    /// Of which failed (their leases ran out `max_attempts` times).
    pub failed: u64,
    /// Of which rejected by the addressee.
    pub rejected: u64,
    /// Median time from creation to the first claim, over the claimed ones.
    pub median_claim_seconds: Option<f64>,
    /// Median time from creation to completion, over the completed ones.
    pub median_complete_seconds: Option<f64>,
}

/// What the statistics need of one hand-off.
pub(crate) struct Row<'a> {
    pub(crate) from_agent: Option<&'a str>,
    /// The addressee, or whoever claimed an open hand-off.
    pub(crate) to_agent: Option<&'a str>,
    pub(crate) status: Status,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) completed_at: Option<DateTime<Utc>>,
    pub(crate) first_claim: Option<DateTime<Utc>>,
}

/// Statistics gathered one hand-off at a time: memory grows with the pairs and two numbers a
/// hand-off, never with the records themselves.
#[derive(Default)]
pub(crate) struct Tally {
    paths: BTreeMap<(String, String), PathTally>,
}

#[derive(Default)]
struct PathTally {
    total: u64,
    completed: u64,
    failed: u64,
    rejected: u64,
    claim: Vec<f64>,
    complete: Vec<f64>,
}

impl Tally {
    pub(crate) fn add(&mut self, row: Row<'_>) {
        let name = |agent: Option<&str>| agent.unwrap_or("*").to_owned();
        let seconds = |from: DateTime<Utc>, to: DateTime<Utc>| (to - from).as_seconds_f64();
        let tally = self
            .paths
            .entry((name(row.from_agent), name(row.to_agent)))
            .or_default();
        tally.total += 1;
        match row.status {
            Status::Completed => {
                tally.completed += 1;
                if let Some(done) = row.completed_at {
                    tally.complete.push(seconds(row.created_at, done));
                }
            }
            Status::Failed => tally.failed += 1,
            Status::Rejected => tally.rejected += 1,
            _ => {}
        }
        if let Some(claimed) = row.first_claim {
            tally.claim.push(seconds(row.created_at, claimed));
        }
    }

    pub(crate) fn finish(self) -> Vec<PathStats> {
        self.paths
            .into_iter()
            .map(|((from_agent, to_agent), mut t)| PathStats {
                from_agent,
                to_agent,
                total: t.total,
                completed: t.completed,
                failed: t.failed,
                rejected: t.rejected,
                median_claim_seconds: median(&mut t.claim),
                median_complete_seconds: median(&mut t.complete),
            })
            .collect()
    }
}

fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
