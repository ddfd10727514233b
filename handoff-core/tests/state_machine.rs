//! Property test: random sequences of claims, heartbeats, releases, failures, completions,
//! rejections, cancellations and clock moves, run against a store and a small reference model.
//!
//! Checked after every step: the store agrees with the model; at most one live claimer per
//! handoff; fencing tokens strictly increase; terminal records accept nothing; replaying a
//! record's event log reproduces it.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use handoff_core::machine::{Command, replay, transition};
use handoff_core::{
    ChainPolicy, Claim, Error, Handoff, ListFilter, ManualClock, NewHandoff, Status, Store,
};
use proptest::prelude::*;

const AGENTS: [&str; 3] = ["a0", "a1", "a2"];
const LEASE: u64 = 60;
const HANDOFFS: usize = 4;

#[derive(Clone, Debug)]
enum Op {
    Claim { h: usize, agent: usize },
    ClaimNext { agent: usize },
    Heartbeat { claim: usize },
    Release { claim: usize },
    Fail { claim: usize },
    Complete { claim: usize },
    Reject { h: usize, agent: usize },
    Cancel { h: usize },
    Advance { secs: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let h = 0..HANDOFFS;
    let agent = 0..AGENTS.len();
    let claim = 0..16usize;
    prop_oneof![
        3 => (h.clone(), agent.clone()).prop_map(|(h, agent)| Op::Claim { h, agent }),
        3 => agent.clone().prop_map(|agent| Op::ClaimNext { agent }),
        2 => claim.clone().prop_map(|claim| Op::Heartbeat { claim }),
        2 => claim.clone().prop_map(|claim| Op::Release { claim }),
        2 => claim.clone().prop_map(|claim| Op::Fail { claim }),
        2 => claim.prop_map(|claim| Op::Complete { claim }),
        1 => (h.clone(), agent).prop_map(|(h, agent)| Op::Reject { h, agent }),
        1 => h.prop_map(|h| Op::Cancel { h }),
        3 => prop_oneof![Just(1u64), Just(30), Just(59), Just(61), Just(200)]
            .prop_map(|secs| Op::Advance { secs }),
    ]
}

/// What the model knows of one handoff.
#[derive(Clone, Debug, PartialEq)]
struct Model {
    id: String,
    to_agent: Option<String>,
    expires_at: Option<DateTime<Utc>>,
    max_attempts: u32,
    status: Status,
    holder: Option<String>,
    token: u64,
    lease_until: Option<DateTime<Utc>>,
    attempts: u32,
}

impl Model {
    /// Applies what the clock makes due, eagerly (the store does it lazily).
    fn settle(&mut self, now: DateTime<Utc>) {
        if self.status == Status::Claimed && self.lease_until.is_some_and(|t| t <= now) {
            self.attempts += 1;
            self.lease_until = None;
            self.status = if self.attempts >= self.max_attempts {
                Status::Failed
            } else {
                Status::Pending
            };
        }
        if self.status == Status::Pending && self.expires_at.is_some_and(|t| t <= now) {
            self.status = Status::Expired;
        }
    }

    fn live_token(&self, token: u64) -> bool {
        self.status == Status::Claimed && self.token == token
    }
}

fn setup(store: Store, clock: &ManualClock) -> (Store, Vec<Model>) {
    let store = store.with_policy(ChainPolicy::unlimited());
    let mut models = Vec::new();
    for i in 0..HANDOFFS {
        let mut new = NewHandoff::new(format!("t{i}"), "goal").max_attempts(2 + i as u32 % 2);
        if i % 2 == 1 {
            new = new.to_agent(AGENTS[i % AGENTS.len()]);
        }
        if i == 3 {
            new = new.expires_at(clock_now(clock) + TimeDelta::seconds(150));
        }
        let h = store.create(new).unwrap();
        models.push(Model {
            id: h.id.clone(),
            to_agent: h.to_agent.clone(),
            expires_at: h.expires_at,
            max_attempts: h.max_attempts,
            status: Status::Pending,
            holder: None,
            token: 0,
            lease_until: None,
            attempts: 0,
        });
    }
    (store, models)
}

fn clock_now(clock: &ManualClock) -> DateTime<Utc> {
    handoff_core::Clock::now(clock)
}

/// The record as it stands at `now`, with due time-driven changes applied.
fn effective(h: &Handoff, now: DateTime<Utc>) -> Handoff {
    transition(h.clone(), &Command::Tick, now).unwrap().record
}

fn run(store: Store, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::at_epoch());
    let (store, mut models) = setup(store.with_clock(clock.clone()), &clock);
    let mut claims: Vec<Claim> = Vec::new();
    let mut max_token: HashMap<String, u64> = HashMap::new();
    let lease = Duration::from_secs(LEASE);

    for op in ops {
        let now = clock_now(&clock);
        for m in &mut models {
            m.settle(now);
        }
        let before: Vec<Handoff> = store.list(&ListFilter::default()).unwrap();
        let result: Result<Option<Handoff>, Error> = match &op {
            Op::Advance { secs } => {
                clock.advance(Duration::from_secs(*secs));
                Ok(None)
            }
            Op::Claim { h, agent } => {
                let m = &mut models[*h];
                let agent = AGENTS[*agent];
                let res = store.claim(&m.id, agent, lease);
                let allowed = m.status == Status::Pending
                    && m.to_agent.as_deref().is_none_or(|to| to == agent);
                prop_assert_eq!(
                    res.is_ok(),
                    allowed,
                    "claim {:?} by {} on {:?}",
                    op,
                    agent,
                    m
                );
                if let Err(e) = &res {
                    let expected = if m.status == Status::Claimed {
                        "AlreadyClaimed"
                    } else {
                        "InvalidTransition"
                    };
                    prop_assert!(format!("{e:?}").starts_with(expected), "{e:?}");
                }
                res.map(|c| {
                    m.status = Status::Claimed;
                    m.holder = Some(agent.to_owned());
                    m.token += 1;
                    m.lease_until = Some(now + TimeDelta::seconds(LEASE as i64));
                    claims.push(c.clone());
                    Some(c.handoff)
                })
            }
            Op::ClaimNext { agent } => {
                let agent = AGENTS[*agent];
                let expected = models.iter().position(|m| {
                    m.status == Status::Pending
                        && m.to_agent.as_deref().is_none_or(|to| to == agent)
                });
                let res = store.claim_next(agent, None, lease).unwrap();
                prop_assert_eq!(
                    res.as_ref().map(|c| c.handoff.id.clone()),
                    expected.map(|i| models[i].id.clone())
                );
                if let (Some(c), Some(i)) = (res, expected) {
                    let m = &mut models[i];
                    m.status = Status::Claimed;
                    m.holder = Some(agent.to_owned());
                    m.token += 1;
                    m.lease_until = Some(now + TimeDelta::seconds(LEASE as i64));
                    claims.push(c.clone());
                    Ok(Some(c.handoff))
                } else {
                    Ok(None)
                }
            }
            Op::Heartbeat { claim }
            | Op::Release { claim }
            | Op::Fail { claim }
            | Op::Complete { claim } => {
                let Some(c) = claims.get(*claim % claims.len().max(1)).cloned() else {
                    continue;
                };
                let m = models.iter_mut().find(|m| m.id == c.handoff.id).unwrap();
                let res = match &op {
                    Op::Heartbeat { .. } => store.heartbeat(&c),
                    Op::Release { .. } => store.release(&c, "r"),
                    Op::Fail { .. } => store.fail(&c, "broke"),
                    _ => store.complete(&c, "done"),
                };
                prop_assert_eq!(res.is_ok(), m.live_token(c.token), "{:?} {:?}", op, m);
                if let Err(e) = &res {
                    prop_assert!(matches!(e, Error::LeaseLost { .. }), "{e:?}");
                } else {
                    match &op {
                        Op::Heartbeat { .. } => {
                            m.lease_until = Some(now + TimeDelta::seconds(LEASE as i64));
                        }
                        Op::Release { .. } => {
                            m.status = Status::Pending;
                            m.attempts += 1;
                            m.lease_until = None;
                        }
                        Op::Fail { .. } => {
                            m.attempts += 1;
                            m.status = if m.attempts >= m.max_attempts {
                                Status::Failed
                            } else {
                                Status::Pending
                            };
                            m.lease_until = None;
                        }
                        _ => {
                            m.status = Status::Completed;
                            m.lease_until = None;
                        }
                    }
                }
                res.map(Some)
            }
            Op::Reject { h, agent } => {
                let m = &mut models[*h];
                let agent = AGENTS[*agent];
                let allowed = !m.status.is_terminal()
                    && match &m.to_agent {
                        Some(to) => to == agent,
                        None => m.status == Status::Claimed && m.holder.as_deref() == Some(agent),
                    };
                let res = store.reject(&m.id, agent, "no");
                prop_assert_eq!(res.is_ok(), allowed);
                if res.is_ok() {
                    m.status = Status::Rejected;
                    m.lease_until = None;
                }
                res.map(Some)
            }
            Op::Cancel { h } => {
                let m = &mut models[*h];
                let res = store.cancel(&m.id, "boss", None);
                prop_assert_eq!(res.is_ok(), !m.status.is_terminal());
                if res.is_ok() {
                    m.status = Status::Cancelled;
                    m.lease_until = None;
                }
                res.map(Some)
            }
        };

        let now = clock_now(&clock);
        for m in &mut models {
            m.settle(now);
        }
        let after: Vec<Handoff> = store.list(&ListFilter::default()).unwrap();
        if result.is_err() {
            prop_assert_eq!(&before, &after, "a refused {:?} changed the store", op);
        }
        for (stored, m) in after.iter().zip(&models) {
            let h = effective(stored, now);
            prop_assert_eq!(h.status, m.status, "{:?} after {:?}", m, op);
            prop_assert_eq!(h.attempts, m.attempts);
            prop_assert_eq!(h.claim_token.unwrap_or(0), m.token);
            // At most one live claimer, and it is the model's.
            if h.status == Status::Claimed {
                prop_assert_eq!(&h.claimed_by, &m.holder);
                prop_assert!(h.lease_until.is_some_and(|t| t > now));
            } else {
                prop_assert!(h.lease_until.is_none());
            }
            // Tokens only grow.
            let seen = max_token.entry(h.id.clone()).or_default();
            prop_assert!(m.token >= *seen);
            *seen = m.token;
            // The log reproduces the stored record.
            let log = store.events(Some(&h.id)).unwrap();
            let replayed = replay(stored, &log);
            prop_assert_eq!(replayed.as_ref(), Some(stored));
            prop_assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
        }
    }
    Ok(())
}

// Every backend runs the same sequences; the slower ones fewer of them.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn memory_store_matches_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(Store::memory(), ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sqlite_store_matches_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(Store::open(":memory:").unwrap(), ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn files_store_matches_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        run(Store::connect(&format!("files:{}", dir.path().display())).unwrap(), ops)?;
    }
}

#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

/// On PostgreSQL when `HANDOFF_TEST_POSTGRES` names a server (CI sets it), a schema per case.
#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn postgres_store_matches_the_model(ops in proptest::collection::vec(op(), 1..60)) {
            if let Some(server) = pg::server("the PostgreSQL model test") {
                let schema = pg::Schema::new(&server, "model");
                run(schema.store(), ops)?;
            }
        }
    }
}
