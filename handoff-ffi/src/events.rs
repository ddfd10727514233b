//! What the store reports back: the event log, chains and per-path statistics.

use std::time::SystemTime;

use handoff_core as core;

use crate::record::{HandoffKind, HandoffStatus, time};

/// One entry of the event log.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Event {
    /// Position in the store's log; strictly increasing in write order.
    pub seq: u64,
    /// The handoff it concerns.
    pub handoff_id: String,
    /// When it happened.
    pub at: SystemTime,
    /// Who caused it; none for the clock (lapses, expiry).
    pub actor: Option<String>,
    /// What happened.
    pub change: Change,
}

/// What an event did to its handoff.
#[derive(Clone, Debug, PartialEq, uniffi::Enum)]
pub enum Change {
    /// The handoff was created. The record holds what was created (its content never changes
    /// afterwards: `Store.get`); the event names where the work goes.
    Created {
        /// The task the handoff belongs to.
        task_id: String,
        /// The agent it is addressed to; none for any agent the chain policy allows.
        to_agent: Option<String>,
    },
    /// An agent took the handoff.
    Claimed {
        /// The new holder.
        agent: String,
        /// The fencing token of this claim.
        token: u64,
        /// When the claim lapses unless renewed.
        lease_until: SystemTime,
    },
    /// The holder renewed its lease.
    Heartbeat {
        /// The new end of the lease.
        lease_until: SystemTime,
    },
    /// The holder gave the handoff back.
    Released {
        /// Why.
        reason: String,
    },
    /// The holder's lease ran out; the handoff is claimable again.
    LeaseExpired {
        /// The token that lapsed.
        token: u64,
    },
    /// The holder reported a failure with attempts left; claimable again.
    AttemptFailed {
        /// The token of the claim that failed.
        token: u64,
        /// What went wrong, as the holder said.
        error: String,
    },
    /// The last allowed attempt failed: reported by the holder, or its lease ran out.
    Failed {
        /// The token of the claim that failed (or lapsed).
        token: u64,
        /// What went wrong, as the holder said; `None` when the lease ran out.
        error: Option<String>,
    },
    /// The holder finished.
    Completed {
        /// The holder's result.
        outcome: String,
        /// The model tokens the work took, as the holder reported them; none when it did not
        /// count them.
        tokens_used: Option<u64>,
    },
    /// The addressed agent refused the handoff.
    Rejected {
        /// Why.
        reason: String,
    },
    /// The handoff was withdrawn.
    Cancelled {
        /// Why, if given.
        reason: Option<String>,
    },
    /// Nobody claimed the handoff before it expired.
    Expired,
}

/// One hop of a chain: a handoff from one agent to the next.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Hop {
    /// The handoff making this hop.
    pub handoff_id: String,
    /// The handoff it continues, if any.
    pub parent_id: Option<String>,
    /// The agent handing over.
    pub from_agent: Option<String>,
    /// The agent taking over: the addressee, or whoever claimed an open handoff.
    pub to_agent: Option<String>,
    /// The handoff's kind.
    pub kind: HandoffKind,
    /// The handoff's status.
    pub status: HandoffStatus,
    /// When the hop was created.
    pub created_at: SystemTime,
}

/// A task's hops in creation order. Checkpoints are not hops and are left out.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Chain {
    /// The task.
    pub task_id: String,
    /// Its hops, oldest first.
    pub hops: Vec<Hop>,
    /// The agents the task passed through, in order (`*` for an open, unclaimed handoff).
    pub path: Vec<String>,
    /// The path as text: `claude → gemini → codex`.
    pub text: String,
}

/// How the handoffs from one agent to another fared.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct PathStats {
    /// The agent handing over (`*` when unnamed).
    pub from_agent: String,
    /// The agent taking over (`*` while nobody has claimed an open handoff).
    pub to_agent: String,
    /// Handoffs on this path.
    pub total: u64,
    /// Of which completed.
    pub completed: u64,
    /// Of which failed (their last allowed attempt failed or lapsed).
    pub failed: u64,
    /// Of which rejected by the addressee.
    pub rejected: u64,
    /// Median time from creation to the first claim, over the claimed ones.
    pub median_claim_seconds: Option<f64>,
    /// Median time from creation to completion, over the completed ones.
    pub median_complete_seconds: Option<f64>,
}

/// How many handoffs are in one status for one addressee.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct QueueCount {
    /// The status.
    pub status: HandoffStatus,
    /// The agent they are addressed to; none: any agent may claim them.
    pub to_agent: Option<String>,
    /// How many.
    pub count: u64,
}

impl From<core::QueueCount> for QueueCount {
    fn from(q: core::QueueCount) -> Self {
        QueueCount {
            status: q.status.into(),
            to_agent: q.to_agent,
            count: q.count,
        }
    }
}

impl From<core::Event> for Event {
    fn from(event: core::Event) -> Self {
        Event {
            seq: event.seq,
            handoff_id: event.handoff_id,
            at: time(event.at),
            actor: event.actor,
            change: event.change.into(),
        }
    }
}

impl Event {
    /// The event as it may be shown: every text its change carries (an outcome, a reason, an
    /// error, the addressee, whatever a newer change adds) through the core's redaction, as the
    /// CLI shows events.
    pub(crate) fn redacted(mut event: core::Event) -> Event {
        if let Ok(mut change) = serde_json::to_value(&event.change) {
            // Iterative, so that nesting depth costs heap, not stack; keys name, not carry.
            let mut pending = vec![&mut change];
            while let Some(value) = pending.pop() {
                match value {
                    serde_json::Value::String(text) => {
                        let (clean, found) = core::redact(text);
                        if !found.is_empty() {
                            *text = clean;
                        }
                    }
                    serde_json::Value::Array(items) => pending.extend(items.iter_mut()),
                    serde_json::Value::Object(map) => pending.extend(map.values_mut()),
                    _ => {}
                }
            }
            if let Ok(change) = serde_json::from_value(change) {
                event.change = change;
            }
        }
        event.into()
    }
}

impl From<core::Change> for Change {
    fn from(change: core::Change) -> Self {
        use core::Change as C;
        match change {
            C::Created { task_id, to_agent } => Change::Created { task_id, to_agent },
            C::Claimed {
                agent,
                token,
                lease_until,
            } => Change::Claimed {
                agent,
                token,
                lease_until: time(lease_until),
            },
            C::Heartbeat { lease_until } => Change::Heartbeat {
                lease_until: time(lease_until),
            },
            C::Released { reason } => Change::Released { reason },
            C::LeaseExpired { token } => Change::LeaseExpired { token },
            C::AttemptFailed { token, error } => Change::AttemptFailed { token, error },
            C::Failed { token, error } => Change::Failed { token, error },
            C::Completed {
                outcome,
                tokens_used,
            } => Change::Completed {
                outcome,
                tokens_used,
            },
            C::Rejected { reason } => Change::Rejected { reason },
            C::Cancelled { reason } => Change::Cancelled { reason },
            C::Expired => Change::Expired,
        }
    }
}

impl From<core::Chain> for Chain {
    fn from(chain: core::Chain) -> Self {
        let path = chain.path();
        let text = chain.to_string();
        Chain {
            task_id: chain.task_id,
            hops: chain.hops.into_iter().map(Hop::from).collect(),
            path,
            text,
        }
    }
}

impl From<core::Hop> for Hop {
    fn from(hop: core::Hop) -> Self {
        Hop {
            handoff_id: hop.handoff_id,
            parent_id: hop.parent_id,
            from_agent: hop.from_agent,
            to_agent: hop.to_agent,
            kind: hop.kind.into(),
            status: hop.status.into(),
            created_at: time(hop.created_at),
        }
    }
}

impl From<core::PathStats> for PathStats {
    fn from(s: core::PathStats) -> Self {
        PathStats {
            from_agent: s.from_agent,
            to_agent: s.to_agent,
            total: s.total,
            completed: s.completed,
            failed: s.failed,
            rejected: s.rejected,
            median_claim_seconds: s.median_claim_seconds,
            median_complete_seconds: s.median_complete_seconds,
        }
    }
}
