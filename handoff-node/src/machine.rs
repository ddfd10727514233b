//! The event log: one entry per transition, as plain objects.

use handoff_core::ops::{self, Operation};
use handoff_core::{Change, Event, Store as CoreStore};
use napi::{Env, JsValue, Unknown};
use napi_derive::napi;
use serde_json::Value;

use crate::errors::{Naming, Outcome};
use crate::ops::{Given, JsArguments, Method, Parameter, arguments_of};
use crate::record::iso;
use crate::store::Store;
use crate::task::{Job, Mirror, ToJs, guarded};
use serde::Serialize;

/// One entry of the event log.
#[napi(
    object,
    js_name = "Event",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsEvent {
    /// Position in the store's log; strictly increasing in write order.
    pub seq: f64,
    /// The handoff it concerns.
    pub handoff_id: String,
    /// When it happened (ISO 8601).
    pub at: String,
    /// Who caused it; `null` for the clock (lapses, expiry).
    pub actor: Option<String>,
    /// What happened.
    #[napi(ts_type = "EventKind")]
    pub kind: String,
    /// The event's details; which keys are present depends on `kind`.
    pub detail: EventDetail,
}

/// Details of an event. `created`: `taskId`, `toAgent` (the record itself is read with
/// `get`); `claimed`: `agent`, `token`, `leaseUntil`; `heartbeat`: `leaseUntil`; `released`,
/// `rejected`, `cancelled`: `reason`; `lease_expired`, `failed`: `token`; `completed`:
/// `outcome` and, when the holder counted them, `tokensUsed`; `expired`: nothing.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDetail {
    /// The task the created handoff belongs to (created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The agent the created handoff is addressed to, `null` for any agent the policy allows
    /// (created).
    #[napi(ts_type = "string | null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_agent: Option<Option<String>>,
    /// The claiming agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The fencing token claimed or lapsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<f64>,
    /// The end of the lease (ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<String>,
    /// Why (released, rejected, cancelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The holder's result (completed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// What went wrong, as the holder said (attempt_failed, failed by `fail`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The model tokens the work took, as the holder reported them (completed, when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<f64>,
}

impl Mirror for Event {
    type Out = JsEvent;
    fn mirror(self) -> JsEvent {
        let kind = self.change.kind().to_owned();
        let mut detail = EventDetail {
            task_id: None,
            to_agent: None,
            agent: None,
            token: None,
            lease_until: None,
            reason: None,
            outcome: None,
            error: None,
            tokens_used: None,
        };
        match self.change {
            Change::Created { task_id, to_agent } => {
                detail.task_id = Some(task_id);
                detail.to_agent = Some(to_agent);
            }
            Change::Claimed {
                agent,
                token,
                lease_until,
            } => {
                detail.agent = Some(agent);
                detail.token = Some(token as f64);
                detail.lease_until = Some(iso(lease_until));
            }
            Change::Heartbeat { lease_until } => detail.lease_until = Some(iso(lease_until)),
            Change::Released { reason } | Change::Rejected { reason } => {
                detail.reason = Some(reason)
            }
            Change::Cancelled { reason } => detail.reason = reason,
            Change::LeaseExpired { token } => detail.token = Some(token as f64),
            Change::AttemptFailed { token, error } => {
                detail.token = Some(token as f64);
                detail.error = Some(error);
            }
            Change::Failed { token, error } => {
                detail.token = Some(token as f64);
                detail.error = error;
            }
            Change::Completed {
                outcome,
                tokens_used,
            } => {
                detail.outcome = Some(outcome);
                detail.tokens_used = tokens_used.map(|n| n as f64);
            }
            // Listed in full: a new kind of event fails to compile here until it is mapped.
            Change::Expired => {}
        }
        JsEvent {
            seq: self.seq as f64,
            handoff_id: self.handoff_id,
            at: iso(self.at),
            actor: self.actor,
            kind,
            detail,
        }
    }
}

/// The store's methods written here, for the type generator.
pub(crate) fn methods() -> Vec<Method> {
    vec![Method::of::<ops::Events>(
        &[],
        Some(Parameter {
            name: "options",
            ts: "EventsOptions",
            optional: true,
        }),
        ["Event[]", "Promise<Event[]>"],
    )]
}

/// A call of `events`: the core's arguments, and whether to redact (this face's own option).
struct EventsCall {
    arguments: JsArguments,
    redact: bool,
}

impl EventsCall {
    fn read(options: Option<&Unknown<'_>>) -> Outcome<EventsCall> {
        let given = Given {
            positional: &[],
            options: Some(("options", options)),
        };
        let mut arguments = arguments_of::<ops::Events>(&given)?;
        let redact = arguments.take_bool("redact", true);
        Ok(EventsCall { arguments, redact })
    }

    fn run(self, store: &CoreStore) -> handoff_core::Result<Vec<Event>> {
        let events = self
            .arguments
            .then(store.limits(), |args| ops::Events::run(store, args))?;
        Ok(match self.redact {
            true => events.into_iter().map(redacted).collect(),
            false => events,
        })
    }
}

/// The event as it may be shown: every text its change carries (an outcome, a reason, an
/// error, the addressee, whatever a newer change adds) through the core's redaction, as the CLI
/// shows events.
fn redacted(mut event: Event) -> Event {
    if let Ok(mut change) = serde_json::to_value(&event.change) {
        // Iterative, so that nesting depth costs heap, not stack; keys name, they do not carry.
        let mut pending = vec![&mut change];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) => {
                    let (clean, found) = handoff_core::redact(text);
                    if !found.is_empty() {
                        *text = clean;
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut()),
                Value::Object(map) => pending.extend(map.values_mut()),
                _ => {}
            }
        }
        if let Ok(change) = serde_json::from_value(change) {
            event.change = change;
        }
    }
    event
}

#[napi]
impl Store {
    /// The event log, oldest first: of the whole store, one handoff (`handoffId`) or one task
    /// (`taskId`). Read a large log in pages: pass the last event's `seq` as `after` and a
    /// `limit`, until a page comes back empty. Every text an event carries (a reason, an
    /// outcome, an error, the addressee) is redacted, as the CLI shows it, unless
    /// `redact: false` (the owner's opt-out).
    #[napi(
        catch_unwind,
        ts_args_type = "options?: EventsOptions",
        ts_return_type = "Event[]"
    )]
    pub fn events<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let events = guarded(env, Naming::AsIs, || {
            Ok(EventsCall::read(options.as_ref())?.run(&store)?)
        })?;
        events.to_js(env)
    }

    /// `events`, as a Promise: the work runs on libuv's thread pool.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: EventsOptions",
        ts_return_type = "Promise<Event[]>"
    )]
    pub fn events_async<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let call = EventsCall::read(options.as_ref());
        let job = Job::new(Naming::AsIs, call.map(|call| move || call.run(&store)));
        Ok(env.spawn(job)?.promise_object().to_unknown())
    }
}
