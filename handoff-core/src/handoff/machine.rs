//! The handoff state machine: one pure function from (record, command, now) to the events it
//! causes, and one function that applies an event to a record.
//!
//! Every change to a record is an [`Event`]; the store writes the new record and its events in
//! one atomic write. Because [`apply`] is the only way a record changes and a record's content
//! never changes after its create, replaying its event log over its content as created
//! reproduces the record exactly ([`replay`]).
//!
//! | from | command / time | to |
//! |---|---|---|
//! | pending | claim | claimed (lease, token) |
//! | claimed | heartbeat | claimed (lease extended, progress kept) |
//! | claimed | release, revoke (an operator) | pending (attempts + 1) |
//! | claimed | lease runs out | pending (attempts + 1), or failed at `max_attempts` |
//! | claimed | complete | completed (outcome) |
//! | pending, claimed | reject | rejected (reason) |
//! | pending, claimed | cancel | cancelled |
//! | pending | `expires_at` passes | expired |
//! | failed, rejected, cancelled | retry (an operator) | pending (attempts 0) |
//! | pending, claimed | set priority | the same (priority changed) |

use chrono::{DateTime, TimeDelta, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::record::{Handoff, Status};

/// One entry of the event log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Event {
    /// Position in the store's log; strictly increasing in write order.
    pub seq: u64,
    /// The handoff it concerns.
    pub handoff_id: String,
    /// When it happened.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub at: DateTime<Utc>,
    /// Who caused it; `None` for the clock (lapses, expiry).
    pub actor: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub change: Change,
}

/// An event that has not been given its place in the log yet.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    /// The handoff it concerns.
    pub handoff_id: String,
    /// When it happened.
    pub at: DateTime<Utc>,
    /// Who caused it.
    pub actor: Option<String>,
    /// What happened.
    pub change: Change,
}

/// What an event did to its handoff. The wire form is `{"kind": ..., "detail": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Change {
    /// The handoff was created. The record itself holds what was created (its content never
    /// changes afterwards); the event names only where the work goes, so that a reader of the
    /// log can route it without a read, and a create writes the record's body once.
    Created {
        /// The task the handoff belongs to.
        task_id: String,
        /// The agent it is addressed to (`None`: any agent the policy allows).
        to_agent: Option<String>,
        /// The priority it was created with (left out when 0).
        #[serde(default, skip_serializing_if = "is_zero")]
        priority: i32,
    },
    /// An agent took the handoff.
    Claimed {
        /// The new holder.
        agent: String,
        /// The fencing token of this claim.
        token: u64,
        /// When the claim lapses unless renewed.
        #[serde(with = "crate::clock::rfc3339")]
        #[schemars(with = "DateTime<Utc>")]
        lease_until: DateTime<Utc>,
    },
    /// The holder renewed its lease.
    Heartbeat {
        /// The new end of the lease.
        #[serde(with = "crate::clock::rfc3339")]
        #[schemars(with = "DateTime<Utc>")]
        lease_until: DateTime<Utc>,
        /// What the holder reported with it, if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<serde_json::Value>,
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
    /// The holder reported a failure (`fail`) with attempts left: the handoff is claimable
    /// again, one more attempt counted.
    AttemptFailed {
        /// The token of the claim that failed.
        token: u64,
        /// What went wrong, as the holder said.
        error: String,
    },
    /// The last allowed attempt failed: the holder reported a failure (`fail`), or its lease
    /// ran out.
    Failed {
        /// The token of the claim that failed (or lapsed).
        token: u64,
        /// What went wrong, as the holder said; `None` when the lease ran out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The holder finished.
    Completed {
        /// The holder's result.
        outcome: String,
        /// The model tokens the work took, as the holder reported them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// An operator took the claim away from its holder: the handoff is claimable again, one
    /// more attempt counted, and the holder's token no longer works.
    Revoked {
        /// The token that was taken away.
        token: u64,
        /// Why.
        reason: String,
    },
    /// An operator put a finished handoff back in the queue, its attempts counted afresh (the
    /// log keeps the earlier ones).
    Retried {
        /// The status it left.
        from: Status,
        /// Why, if given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The handoff's priority changed.
    PriorityChanged {
        /// The new priority.
        priority: i32,
    },
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl Change {
    /// The event's kind as it appears on the wire (`created`, `claimed`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Created { .. } => "created",
            Change::Claimed { .. } => "claimed",
            Change::Heartbeat { .. } => "heartbeat",
            Change::Released { .. } => "released",
            Change::LeaseExpired { .. } => "lease_expired",
            Change::AttemptFailed { .. } => "attempt_failed",
            Change::Failed { .. } => "failed",
            Change::Completed { .. } => "completed",
            Change::Rejected { .. } => "rejected",
            Change::Cancelled { .. } => "cancelled",
            Change::Expired => "expired",
            Change::Revoked { .. } => "revoked",
            Change::Retried { .. } => "retried",
            Change::PriorityChanged { .. } => "priority_changed",
        }
    }
}

/// What a caller asks of a handoff.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Take the handoff for `lease`.
    Claim {
        /// The claiming agent.
        agent: String,
        /// How long the claim lasts without a heartbeat.
        lease: TimeDelta,
    },
    /// Extend the lease of the claim holding `token`.
    Heartbeat {
        /// The holder's fencing token.
        token: u64,
        /// The new lease, counted from now.
        lease: TimeDelta,
        /// What the holder reports (checked for size by the store); `None` keeps the last.
        progress: Option<serde_json::Value>,
    },
    /// Give the handoff back.
    Release {
        /// The holder's fencing token.
        token: u64,
        /// Why.
        reason: String,
    },
    /// Report that the work failed: claimable again while attempts remain, `failed` after
    /// the last (`max_attempts`).
    Fail {
        /// The holder's fencing token.
        token: u64,
        /// What went wrong.
        error: String,
    },
    /// Finish the handoff.
    Complete {
        /// The holder's fencing token.
        token: u64,
        /// The result.
        outcome: String,
        /// The model tokens the work took, if the holder counts them.
        tokens_used: Option<u64>,
    },
    /// Refuse the handoff, as the addressed agent.
    Reject {
        /// The refusing agent.
        agent: String,
        /// Why.
        reason: String,
    },
    /// Withdraw the handoff: by name as its creator (or anyone when it has none), or as its
    /// holder with the claim's token (whose secret the store has checked).
    Cancel {
        /// Who withdraws it; `None` for the holder.
        by: Option<String>,
        /// Why, if given.
        reason: Option<String>,
        /// The holder's fencing token, when the holder cancels.
        claim_token: Option<u64>,
    },
    /// Take a live claim away from its holder, as an operator.
    Revoke {
        /// Who revokes it.
        by: String,
        /// Why.
        reason: String,
    },
    /// Put a failed, rejected or cancelled handoff back in the queue, as an operator.
    Retry {
        /// Who retries it.
        by: String,
        /// Why, if given.
        reason: Option<String>,
    },
    /// Change the priority of an open handoff.
    SetPriority {
        /// Who changes it.
        by: String,
        /// The new priority.
        priority: i32,
    },
    /// Nothing but the passing of time: applies lapses and expiry.
    Tick,
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Claim { .. } => "claim",
            Command::Heartbeat { .. } => "heartbeat",
            Command::Release { .. } => "release",
            Command::Fail { .. } => "fail",
            Command::Complete { .. } => "complete",
            Command::Reject { .. } => "reject",
            Command::Cancel { .. } => "cancel",
            Command::Revoke { .. } => "revoke",
            Command::Retry { .. } => "retry",
            Command::SetPriority { .. } => "set_priority",
            Command::Tick => "tick",
        }
    }
}

/// The outcome of a successful transition: the new record and the events that lead to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    /// The record after every event was applied.
    pub record: Handoff,
    /// The events, in order; empty when nothing changed.
    pub events: Vec<NewEvent>,
}

/// Decides what `command` does to `record` at `now`.
///
/// Time-driven changes (a lapsed lease, a passed `expires_at`) are applied first, so a command
/// always meets the record as it stands at `now`. On error nothing is to be written.
pub fn transition(record: Handoff, command: &Command, now: DateTime<Utc>) -> Result<Transition> {
    let mut next = Transition {
        record,
        events: Vec::new(),
    };
    while let Some((at, change)) = lapse(&next.record, now) {
        next.push(None, at, change);
    }
    let h = &next.record;
    let refuse = |reason: &str| Error::InvalidTransition {
        id: h.id.clone(),
        status: h.status,
        event: command.name(),
        reason: reason.to_owned(),
    };
    let lease_lost = |token: u64| {
        let since = match (h.status, h.claim_token) {
            (Status::Claimed, Some(current)) => {
                format!("the handoff was claimed again with token {current}")
            }
            (Status::Pending, _) => "the claim was released or its lease ran out".to_owned(),
            (status, _) => format!("the handoff is {status}"),
        };
        let reason = format!("token {token} is no longer current: {since}");
        Error::LeaseLost {
            id: h.id.clone(),
            token,
            reason,
        }
    };
    let (actor, change) = match command {
        Command::Tick => return Ok(next),
        Command::Claim { agent, lease } => {
            match h.status {
                Status::Pending => {}
                Status::Claimed => {
                    return Err(Error::AlreadyClaimed {
                        id: h.id.clone(),
                        holder: h.claimed_by.clone().unwrap_or_default(),
                    });
                }
                _ => return Err(refuse("a finished handoff cannot be claimed")),
            }
            if let Some(to) = &h.to_agent
                && to != agent
            {
                return Err(refuse(&format!("it is addressed to {to}")));
            }
            let change = Change::Claimed {
                agent: agent.clone(),
                token: h.claim_token.unwrap_or(0) + 1,
                lease_until: lease_end(now, *lease)?,
            };
            (Some(agent.clone()), change)
        }
        Command::Heartbeat {
            token,
            lease,
            progress,
        } => {
            let holder = holder(h, *token).ok_or_else(|| lease_lost(*token))?;
            let lease_until = lease_end(now, *lease)?;
            let progress = progress.clone();
            (
                Some(holder),
                Change::Heartbeat {
                    lease_until,
                    progress,
                },
            )
        }
        Command::Release { token, reason } => {
            let holder = holder(h, *token).ok_or_else(|| lease_lost(*token))?;
            (
                Some(holder),
                Change::Released {
                    reason: reason.clone(),
                },
            )
        }
        Command::Fail { token, error } => {
            let holder = holder(h, *token).ok_or_else(|| lease_lost(*token))?;
            let change = if h.attempts + 1 >= h.max_attempts {
                Change::Failed {
                    token: *token,
                    error: Some(error.clone()),
                }
            } else {
                Change::AttemptFailed {
                    token: *token,
                    error: error.clone(),
                }
            };
            (Some(holder), change)
        }
        Command::Complete {
            token,
            outcome,
            tokens_used,
        } => {
            let holder = holder(h, *token).ok_or_else(|| lease_lost(*token))?;
            (
                Some(holder),
                Change::Completed {
                    outcome: outcome.clone(),
                    tokens_used: *tokens_used,
                },
            )
        }
        Command::Reject { agent, reason } => {
            if h.status.is_terminal() {
                return Err(refuse("a finished handoff cannot be rejected"));
            }
            let allowed = match &h.to_agent {
                Some(to) => to == agent,
                None => h.status == Status::Claimed && h.claimed_by.as_deref() == Some(agent),
            };
            if !allowed {
                return Err(refuse(&format!(
                    "only the addressed agent ({}) may reject it",
                    h.to_agent
                        .as_deref()
                        .or(h.claimed_by.as_deref())
                        .unwrap_or("its holder")
                )));
            }
            (
                Some(agent.clone()),
                Change::Rejected {
                    reason: reason.clone(),
                },
            )
        }
        Command::Cancel {
            by,
            reason,
            claim_token,
        } => {
            if h.status.is_terminal() {
                return Err(refuse("a finished handoff cannot be cancelled"));
            }
            let actor = match (claim_token, by) {
                (Some(token), _) => holder(h, *token).ok_or_else(|| lease_lost(*token))?,
                (None, Some(by)) => match &h.from_agent {
                    Some(creator) if creator != by => {
                        return Err(refuse(&format!(
                            "only its creator ({creator}) may cancel it by name; its holder cancels with its claim"
                        )));
                    }
                    _ => by.clone(),
                },
                (None, None) => return Err(refuse("a cancel must say who cancels")),
            };
            (
                Some(actor),
                Change::Cancelled {
                    reason: reason.clone(),
                },
            )
        }
        Command::Revoke { by, reason } => {
            if h.status != Status::Claimed {
                return Err(refuse("only a live claim can be revoked"));
            }
            let change = Change::Revoked {
                token: h.claim_token.unwrap_or(0),
                reason: reason.clone(),
            };
            (Some(by.clone()), change)
        }
        Command::Retry { by, reason } => {
            match h.status {
                Status::Failed | Status::Rejected | Status::Cancelled => {}
                Status::Expired => {
                    return Err(refuse(
                        "its expires_at has passed, so it would expire again at once: create it anew",
                    ));
                }
                Status::Completed => return Err(refuse("a completed handoff is done")),
                Status::Pending | Status::Claimed => {
                    return Err(refuse(
                        "only a failed, rejected or cancelled handoff is retried",
                    ));
                }
            }
            let change = Change::Retried {
                from: h.status,
                reason: reason.clone(),
            };
            (Some(by.clone()), change)
        }
        Command::SetPriority { by, priority } => {
            if h.status.is_terminal() {
                return Err(refuse("a finished handoff has no place in the queue"));
            }
            let change = Change::PriorityChanged {
                priority: *priority,
            };
            (Some(by.clone()), change)
        }
    };
    next.push(actor, now, change);
    Ok(next)
}

/// When a lease taken at `now` ends; an error rather than an overflow at the end of time.
fn lease_end(now: DateTime<Utc>, lease: TimeDelta) -> Result<DateTime<Utc>> {
    now.checked_add_signed(lease)
        .ok_or_else(|| Error::invalid("lease_seconds", "the lease would end after the year 262143"))
}

/// The holder of a live claim with this token.
fn holder(h: &Handoff, token: u64) -> Option<String> {
    (h.status == Status::Claimed && h.claim_token == Some(token))
        .then(|| h.claimed_by.clone().unwrap_or_default())
}

/// The next time-driven change due at `now`, with the moment it became due.
fn lapse(h: &Handoff, now: DateTime<Utc>) -> Option<(DateTime<Utc>, Change)> {
    match h.status {
        Status::Claimed => {
            let until = h.lease_until?;
            if until > now {
                return None;
            }
            let token = h.claim_token.unwrap_or(0);
            let change = if h.attempts + 1 >= h.max_attempts {
                Change::Failed { token, error: None }
            } else {
                Change::LeaseExpired { token }
            };
            Some((until, change))
        }
        Status::Pending => {
            let expires = h.expires_at?;
            (expires <= now).then_some((expires, Change::Expired))
        }
        _ => None,
    }
}

impl Transition {
    fn push(&mut self, actor: Option<String>, at: DateTime<Utc>, change: Change) {
        apply(&mut self.record, &change, at);
        self.events.push(NewEvent {
            handoff_id: self.record.id.clone(),
            at,
            actor,
            change,
        });
    }
}

/// Applies one event to a record. This is the only place a record's lifecycle changes.
pub fn apply(h: &mut Handoff, change: &Change, at: DateTime<Utc>) {
    let finish = |h: &mut Handoff, status: Status, outcome: Option<String>| {
        h.status = status;
        h.lease_until = None;
        h.completed_at = Some(at);
        h.outcome = outcome;
    };
    match change {
        Change::Created { priority, .. } => {
            *h = h.as_created();
            h.priority = *priority;
        }
        Change::Claimed {
            agent,
            token,
            lease_until,
        } => {
            h.status = Status::Claimed;
            h.claimed_by = Some(agent.clone());
            h.claim_token = Some(*token);
            h.lease_until = Some(*lease_until);
            h.heartbeat_at = Some(at);
            h.progress = None;
        }
        Change::Heartbeat {
            lease_until,
            progress,
        } => {
            h.lease_until = Some(*lease_until);
            h.heartbeat_at = Some(at);
            if progress.is_some() {
                h.progress = progress.clone();
            }
        }
        Change::Released { .. }
        | Change::LeaseExpired { .. }
        | Change::AttemptFailed { .. }
        | Change::Revoked { .. } => {
            h.status = Status::Pending;
            h.lease_until = None;
            h.attempts += 1;
        }
        Change::Failed { error, .. } => {
            h.attempts += 1;
            let outcome = match error {
                Some(error) => error.clone(),
                None => format!("lease ran out {} times", h.attempts),
            };
            finish(h, Status::Failed, Some(outcome));
        }
        Change::Completed { outcome, .. } => finish(h, Status::Completed, Some(outcome.clone())),
        Change::Rejected { reason } => finish(h, Status::Rejected, Some(reason.clone())),
        Change::Cancelled { reason } => finish(h, Status::Cancelled, reason.clone()),
        Change::Expired => finish(h, Status::Expired, None),
        Change::Retried { .. } => {
            h.status = Status::Pending;
            h.lease_until = None;
            h.completed_at = None;
            h.outcome = None;
            h.attempts = 0;
            h.progress = None;
        }
        Change::PriorityChanged { priority } => h.priority = *priority,
    }
}

/// Rebuilds the lifecycle of `record` from its event log, which must start with its `created`
/// event: the record's content as created ([`Handoff::as_created`]) with every event applied
/// in order. `None` when the log does not start with this record's creation.
///
/// The result equals `record` when the log is complete: an audit of the record by its trail.
pub fn replay<'a>(
    record: &Handoff,
    events: impl IntoIterator<Item = &'a Event>,
) -> Option<Handoff> {
    let mut events = events.into_iter();
    let first = events.next()?;
    if first.handoff_id != record.id || !matches!(first.change, Change::Created { .. }) {
        return None;
    }
    let mut h = record.as_created();
    apply(&mut h, &first.change, first.at);
    for event in events {
        apply(&mut h, &event.change, event.at);
    }
    Some(h)
}
