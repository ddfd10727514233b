//! The event log: one entry per transition, as plain objects.

use handoff_core::ops::{self, Operation};
use handoff_core::{Event, Store as CoreStore};
use napi::{Env, JsValue, Unknown};
use napi_derive::napi;
use serde_json::Value;

use crate::errors::{Naming, Outcome};
use crate::ops::{Given, JsArguments, arguments_of};
use crate::output::Json;
use crate::run::{Job, ToJs, guarded};
use crate::store::Store;

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

    fn run(self, store: &CoreStore) -> handoff_core::Result<Json> {
        let events = self
            .arguments
            .then(store.limits(), |args| ops::Events::run(store, args))?;
        let events: Vec<Event> = match self.redact {
            true => events.into_iter().map(redacted).collect(),
            false => events,
        };
        Json::of(&events)
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
