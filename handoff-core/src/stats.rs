//! Path statistics: how hand-offs between each pair of agents fare, from the event log.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::machine::{Change, Event};
use crate::record::{Handoff, Kind, Status};

/// How the hand-offs from one agent to another fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// Statistics per from→to pair, ordered by pair. Checkpoints are not hand-offs and are left out.
pub fn path_stats(records: &[Handoff], events: &[Event]) -> Vec<PathStats> {
    let mut first_claim: HashMap<&str, DateTime<Utc>> = HashMap::new();
    for event in events {
        if let Change::Claimed { .. } = event.change {
            first_claim
                .entry(event.handoff_id.as_str())
                .or_insert(event.at);
        }
    }
    #[derive(Default)]
    struct Tally {
        total: u64,
        completed: u64,
        failed: u64,
        rejected: u64,
        claim: Vec<f64>,
        complete: Vec<f64>,
    }
    let mut paths: BTreeMap<(String, String), Tally> = BTreeMap::new();
    let seconds = |from: DateTime<Utc>, to: DateTime<Utc>| (to - from).as_seconds_f64();
    for h in records.iter().filter(|h| h.kind != Kind::Checkpoint) {
        let name = |agent: Option<&str>| agent.unwrap_or("*").to_owned();
        let tally = paths
            .entry((name(h.from_agent.as_deref()), name(h.successor())))
            .or_default();
        tally.total += 1;
        match h.status {
            Status::Completed => {
                tally.completed += 1;
                if let Some(done) = h.completed_at {
                    tally.complete.push(seconds(h.created_at, done));
                }
            }
            Status::Failed => tally.failed += 1,
            Status::Rejected => tally.rejected += 1,
            _ => {}
        }
        if let Some(claimed) = first_claim.get(h.id.as_str()) {
            tally.claim.push(seconds(h.created_at, *claimed));
        }
    }
    paths
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
