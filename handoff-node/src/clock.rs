//! `ManualClock`: a clock that moves only when told to, for tests and simulations.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use handoff_core as core;
use napi::bindgen_prelude::{ClassInstance, JavaScriptClassExt, JsObjectValue, Object};
use napi::{Env, Unknown, ValueType};
use napi_derive::napi;
use serde_json::Value;

use crate::convert;
use crate::errors::{Naming, Outcome, invalid};
use crate::record::iso;
use crate::run::guarded;

/// A clock that moves only when told to. Give it to `open(path, { clock })` or
/// `Store.memory({ clock })` to drive leases, expiry and `stalled` without waiting.
#[napi]
pub struct ManualClock {
    inner: Arc<core::ManualClock>,
}

/// An ISO 8601 time (or a `Date`) given for `field`.
fn time(value: &Unknown<'_>, field: &str) -> Outcome<DateTime<Utc>> {
    match convert::json(value, field)? {
        Value::String(text) => DateTime::parse_from_rfc3339(&text)
            .map(|at| at.with_timezone(&Utc))
            .map_err(|_| {
                invalid(
                    field,
                    "must be an ISO 8601 time with an offset, like 2026-01-01T00:00:00Z",
                )
            }),
        _ => Err(invalid(field, "must be an ISO 8601 string or a Date")),
    }
}

#[napi]
impl ManualClock {
    /// A clock standing at `start` (an ISO 8601 string or a `Date`), or at 2026-01-01T00:00:00Z.
    #[napi(constructor, catch_unwind, ts_args_type = "start?: string | Date")]
    pub fn new(env: Env, start: Unknown<'_>) -> napi::Result<Self> {
        guarded(&env, Naming::Js, || {
            let clock = match start.get_type()? {
                ValueType::Undefined => core::ManualClock::at_epoch(),
                _ => core::ManualClock::new(time(&start, "start")?),
            };
            Ok(ManualClock {
                inner: Arc::new(clock),
            })
        })
    }

    /// The clock's time (ISO 8601).
    #[napi(catch_unwind)]
    pub fn now(&self) -> String {
        iso(core::Clock::now(&*self.inner))
    }

    /// Moves the clock forward by `seconds` (at least 0).
    #[napi(catch_unwind, ts_args_type = "seconds: number")]
    pub fn advance(&self, env: Env, seconds: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            let seconds = convert::number(&seconds, "seconds")?;
            let by = Duration::try_from_secs_f64(seconds).map_err(|_| {
                invalid(
                    "seconds",
                    "must be a non-negative, finite number of seconds",
                )
            })?;
            self.inner.advance(by);
            Ok(())
        })
    }

    /// Sets the clock to `at` (an ISO 8601 string or a `Date`).
    #[napi(catch_unwind, ts_args_type = "at: string | Date")]
    pub fn set(&self, env: Env, at: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            self.inner.set(time(&at, "at")?);
            Ok(())
        })
    }
}

/// The `clock` of an options object, if one is given.
pub(crate) fn from_options(
    env: &Env,
    options: &Unknown<'_>,
) -> Outcome<Option<Arc<dyn core::Clock>>> {
    if options.get_type()? != ValueType::Object {
        return Ok(None);
    }
    let options: Object<'_> = convert::object(options, "options")?;
    let clock: Unknown<'_> = options.get_named_property("clock")?;
    if clock.get_type()? == ValueType::Undefined {
        return Ok(None);
    }
    if !ManualClock::instance_of(env, &clock)? {
        return Err(invalid("clock", "must be a ManualClock"));
    }
    let clock: ClassInstance<'_, ManualClock> = options.get_named_property("clock")?;
    Ok(Some(clock.inner.clone()))
}
