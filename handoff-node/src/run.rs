//! Running a call: on the JavaScript thread (`sync`) or on libuv's thread pool ([`Job`]),
//! with panics caught and every failure turned into a JavaScript error by
//! `errors::to_js`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use napi::JsValue;
use napi::bindgen_prelude::{AsyncTask, JsObjectValue, ToNapiValue};
use napi::{Env, ScopedTask, Unknown};
use schemars::JsonSchema;
use serde::Serialize;

use crate::errors::{self, Failure, Naming, Outcome};
use crate::output;

/// A core value returned to JavaScript by a [`Job`].
pub trait ToJs: Send + 'static {
    /// Converts it on the JavaScript thread.
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>>;
}

/// The result of a call that returns nothing: `undefined` in JavaScript.
impl ToJs for () {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        ().into_unknown(env)
    }
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Runs `call` on the JavaScript thread, catching a panic, and converts a failure.
pub(crate) fn guarded<T>(
    env: &Env,
    naming: Naming,
    call: impl FnOnce() -> Outcome<T>,
) -> napi::Result<T> {
    catch_unwind(AssertUnwindSafe(call))
        .unwrap_or_else(|payload| Err(Failure::Panic(panic_message(&*payload))))
        .map_err(|failure| errors::to_js(env, failure, naming))
}

/// Runs `call` on the JavaScript thread and converts its result or failure.
pub(crate) fn sync<'env, T: Serialize + JsonSchema + 'static>(
    env: &Env,
    naming: Naming,
    call: impl FnOnce() -> Outcome<T>,
) -> napi::Result<Unknown<'env>> {
    output::to_js(env, &guarded(env, naming, call)?)
}

/// A result that can settle a promise from a thread of its own (`on_own_thread`), where the
/// conversion gets an owned `Env` rather than one to borrow.
pub trait Settle: ToJs {
    /// Converts it on the JavaScript thread.
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>>;
}

impl Settle for () {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        env.get_global()?.get_named_property("undefined")
    }
}

/// Runs `work` on a thread of its own and returns the promise of its result: for a call that
/// may wait a long time (`claimNextAsync` with `waitSeconds`, a verifier or a judge awaited on
/// the JavaScript thread), which on libuv's pool would hold one of its few threads (4 by
/// default, shared with `fs`, `dns` and every other `*Async` call) for the whole wait.
pub(crate) fn on_own_thread<'env, T: Settle, E>(
    env: &'env Env,
    naming: Naming,
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> napi::Result<Unknown<'env>>
where
    Failure: From<E>,
{
    let (deferred, promise) = env.create_deferred()?;
    std::thread::Builder::new()
        .name("handoff-wait".to_owned())
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(work))
                .map(|result| result.map_err(Failure::from))
                .unwrap_or_else(|payload| Err(Failure::Panic(panic_message(&*payload))));
            deferred.resolve(move |env: Env| match outcome {
                Ok(value) => value.settle(env),
                Err(failure) => Err(errors::to_js(&env, failure, naming)),
            });
        })
        .map_err(|e| napi::Error::from_reason(format!("cannot start a thread to wait on: {e}")))?;
    Ok(promise.to_unknown())
}

type Work<T> = Box<dyn FnOnce() -> handoff_core::Result<T> + Send>;

/// One `*Async` call: the arguments were read on the JavaScript thread; `work` runs on the
/// thread pool; the promise settles on the JavaScript thread. A failure to read the arguments
/// rejects the promise too, with the same error the sync call would throw.
pub struct Job<T> {
    naming: Naming,
    work: Option<Outcome<Work<T>>>,
}

impl<T: ToJs> Job<T> {
    /// A job doing `work`, or rejecting with the failure met while reading its arguments.
    pub(crate) fn start<F>(naming: Naming, work: Outcome<F>) -> AsyncTask<Job<T>>
    where
        F: FnOnce() -> handoff_core::Result<T> + Send + 'static,
    {
        AsyncTask::new(Job::new(naming, work))
    }

    /// The job itself, for [`Env::spawn`].
    pub(crate) fn new<F>(naming: Naming, work: Outcome<F>) -> Job<T>
    where
        F: FnOnce() -> handoff_core::Result<T> + Send + 'static,
    {
        let work = work.map(|f| Box::new(f) as Work<T>);
        Job {
            naming,
            work: Some(work),
        }
    }
}

impl<'task, T: ToJs> ScopedTask<'task> for Job<T> {
    type Output = Outcome<T>;
    type JsValue = Unknown<'task>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let outcome = match self.work.take() {
            Some(Ok(work)) => catch_unwind(AssertUnwindSafe(work))
                .map(|result| result.map_err(Failure::from))
                .unwrap_or_else(|payload| Err(Failure::Panic(panic_message(&*payload)))),
            Some(Err(failure)) => Err(failure),
            None => Err(Failure::Panic("job ran twice".to_owned())),
        };
        Ok(outcome)
    }

    fn resolve(&mut self, env: &'task Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        match output {
            Ok(value) => value.to_js(env),
            Err(failure) => Err(errors::to_js(env, failure, self.naming)),
        }
    }
}
