//! Running a call: on the JavaScript thread ([`sync`]) or on libuv's thread pool ([`Job`]),
//! with panics caught and every failure turned into a JavaScript error by
//! [`errors::to_js`](crate::errors::to_js).

use std::panic::{AssertUnwindSafe, catch_unwind};

use napi::bindgen_prelude::{AsyncTask, ToNapiValue, TypeName};
use napi::{Env, Task};

use crate::errors::{self, Failure, Naming, Outcome};

/// A core value and the JavaScript shape it is returned as.
pub trait ToJs: Send + 'static {
    /// The napi type it converts to.
    type Js: ToNapiValue + TypeName;
    /// Converts it.
    fn to_js(self) -> Self::Js;
}

impl<T: ToJs> ToJs for Vec<T> {
    type Js = Vec<T::Js>;
    fn to_js(self) -> Self::Js {
        self.into_iter().map(ToJs::to_js).collect()
    }
}

impl<T: ToJs> ToJs for Option<T> {
    type Js = Option<T::Js>;
    fn to_js(self) -> Self::Js {
        self.map(ToJs::to_js)
    }
}

impl ToJs for String {
    type Js = String;
    fn to_js(self) -> String {
        self
    }
}

impl ToJs for usize {
    type Js = f64;
    fn to_js(self) -> f64 {
        self as f64
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Runs `call` on the JavaScript thread and converts its result or failure.
pub(crate) fn sync<T: ToJs>(
    env: &Env,
    naming: Naming,
    call: impl FnOnce() -> Outcome<T>,
) -> napi::Result<T::Js> {
    let outcome = catch_unwind(AssertUnwindSafe(call))
        .unwrap_or_else(|payload| Err(Failure::Panic(panic_message(&*payload))));
    outcome.map(ToJs::to_js).map_err(|failure| errors::to_js(env, failure, naming))
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
        let work = work.map(|f| Box::new(f) as Work<T>);
        AsyncTask::new(Job {
            naming,
            work: Some(work),
        })
    }
}

impl<T: ToJs> Task for Job<T> {
    type Output = Outcome<T>;
    type JsValue = T::Js;

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

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        output.map(ToJs::to_js).map_err(|failure| errors::to_js(&env, failure, self.naming))
    }
}
