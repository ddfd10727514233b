//! Holding a claim while its work runs (the core's [`handoff_core::store::Lease`]):
//! `store.withLease(claim, work, options?)`, the JavaScript form of Python's
//! `with store.lease(claim):`.
//!
//! The core's lease renews the claim from a thread of its own, so the heartbeats go on whatever
//! the JavaScript thread does. `work(lease)` runs on the JavaScript thread, sync or async, called
//! from a Promise's `then` so that whatever it throws is a rejection exactly as thrown (an N-API
//! call would keep a thrown object, but not a thrown string on Node 20). `Promise.allSettled`
//! awaits it (and the `outcome` function's answer), never rejecting; then the claim is settled
//! on a thread of its own, since settling stops the heartbeats first and may wait for one
//! heartbeat's write: completed with the work's outcome, or failed with the error's message,
//! the error itself then rejected unchanged. Only that last step keeps Node running: neither
//! the heartbeats nor work that never settles do.
//!
//! The `Lease` handed to `work` reads the core's lease while it is held and throws `LEASE_LOST`
//! once it is settled.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use handoff_core::ops;
use handoff_core::store::{ClaimRef, Lease as CoreLease};
use handoff_core::{Error, Handoff, Problem};
use napi::bindgen_prelude::{
    CallbackContext, Either, FnArgs, Function, JavaScriptClassExt, JsObjectValue,
    KeyCollectionMode, KeyConversion, KeyFilter, Object, ObjectRef, PromiseRaw,
};
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;
use serde::Serialize;

use crate::convert::{self, type_name};
use crate::errors::{self, Failure, Naming, Outcome};
use crate::memory::rejected;
use crate::ops::{Given, arguments_of};
use crate::output::{self, Json};
use crate::run::guarded;
use crate::store::Store;

/// Why a settled lease cannot be used, as its `LEASE_LOST` error says.
const SETTLED: &str = "the lease was settled: withLease completed or failed its claim when the \
                       work finished, so the lease cannot be used any more";

/// The fail message of work that threw something without a message.
const NO_MESSAGE: &str = "the work failed without a message";

/// The core's lease, until it is settled; and its claim.
struct Held {
    lease: Mutex<Option<CoreLease>>,
    claim: ClaimRef,
}

impl Held {
    /// The core's lease, taken out to be settled: `None` once it was.
    fn take(&self) -> Option<CoreLease> {
        self.lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The error of a lease used after it was settled.
    fn settled(&self) -> Error {
        Error::LeaseLost {
            id: self.claim.handoff_id.clone(),
            token: self.claim.token,
            reason: SETTLED.to_owned(),
        }
    }
}

impl Drop for Held {
    /// Reached unsettled only when the work's Promise never settled and was collected: the
    /// core's lease, dropped, fails the claim (`DROPPED`) so that the work goes back to the
    /// queue. Off this thread, which may be the garbage collector's: stopping the heartbeats
    /// may wait for one heartbeat's write.
    fn drop(&mut self) {
        let lease = self
            .lease
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(lease) = lease {
            off_thread(Box::new(move || drop(lease)));
        }
    }
}

/// A claim held while `store.withLease` runs its work: renewed from a thread of the core's own
/// every third of its lease until the work finishes.
#[napi]
pub struct Lease {
    held: Arc<Held>,
}

/// A claim reference as `lease.claim` gives it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsClaimReference {
    /// The claimed handoff's id.
    pub handoff_id: String,
    /// The claim's fencing token.
    pub token: f64,
    /// The claim's secret.
    pub secret: String,
    /// The lease length in seconds.
    pub lease_seconds: f64,
}

impl JsClaimReference {
    fn of(claim: &ClaimRef) -> JsClaimReference {
        JsClaimReference {
            handoff_id: claim.handoff_id.clone(),
            token: claim.token as f64,
            secret: claim.secret.expose().to_owned(),
            lease_seconds: claim.lease.as_secs_f64(),
        }
    }
}

#[napi]
impl Lease {
    /// Whether a heartbeat found the claim gone (its lease lapsed, the handoff was cancelled or
    /// taken over): the work should stop, since completing it will fail with `LEASE_LOST`.
    /// Throws `LEASE_LOST` once the lease is settled (after the work finished).
    #[napi(getter, catch_unwind)]
    pub fn lost(&self, env: Env) -> napi::Result<bool> {
        guarded(&env, Naming::AsIs, || {
            let lease = self
                .held
                .lease
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match &*lease {
                Some(lease) => Ok(lease.is_lost()),
                None => Err(self.held.settled().into()),
            }
        })
    }

    /// The claim held, as its reference (`handoffId`, `token`, `secret`, `leaseSeconds`); still
    /// readable once the lease is settled.
    #[napi(getter, catch_unwind, ts_return_type = "ClaimReference")]
    pub fn claim(&self, env: Env) -> napi::Result<Unknown<'static>> {
        Json::plain(&JsClaimReference::of(&self.held.claim))
            .map_err(|err| errors::to_js(&env, Failure::Core(err), Naming::AsIs))?
            .parse(&env)
    }
}

/// The outcome asked for in `withLease`'s options.
enum Asked<'env> {
    /// None: the work's value when it is a string, else ''.
    Nothing,
    /// The work's value when it is a string, else this.
    Text(String),
    /// This function's answer for the work's value, whatever it is.
    Function(JsFunction<'env>),
}

/// A function as `withLease` takes it.
type JsFunction<'env> = Function<'env, Unknown<'env>, Unknown<'env>>;

/// Reads `withLease`'s options, noting each problem in `problems`.
fn read_options<'env>(
    options: Option<&Unknown<'env>>,
    problems: &mut Vec<Problem>,
) -> Outcome<Asked<'env>> {
    let Some(options) = options else {
        return Ok(Asked::Nothing);
    };
    let t = options.get_type()?;
    if matches!(t, ValueType::Undefined | ValueType::Null) {
        return Ok(Asked::Nothing);
    }
    let object = match convert::object(options, "options") {
        Ok(object) => object,
        Err(Failure::Core(err)) => {
            problems.extend(err.problems().iter().cloned());
            return Ok(Asked::Nothing);
        }
        Err(other) => return Err(other),
    };
    let names = object.get_all_property_names(
        KeyCollectionMode::OwnOnly,
        KeyFilter::Enumerable,
        KeyConversion::NumbersToStrings,
    )?;
    for i in 0..names.get_array_length()? {
        let name: Unknown<'_> = names.get_element(i)?;
        let name = match name.get_type()? {
            ValueType::String => name.coerce_to_string()?.into_utf8()?.into_owned()?,
            _ => continue,
        };
        if name != "outcome" {
            problems.push(Problem::new(
                name,
                "is not an option of withLease (it takes outcome)",
            ));
        }
    }
    let found: Either<JsFunction<'env>, Unknown<'env>> = object.get_named_property("outcome")?;
    Ok(match found {
        Either::A(function) => Asked::Function(function),
        Either::B(value) => match value.get_type()? {
            ValueType::Undefined | ValueType::Null => Asked::Nothing,
            ValueType::String => match convert::string(&value, "outcome") {
                Ok(text) => Asked::Text(text),
                Err(Failure::Core(err)) => {
                    problems.extend(err.problems().iter().cloned());
                    Asked::Nothing
                }
                Err(other) => return Err(other),
            },
            t => {
                problems.push(Problem::new(
                    "outcome",
                    format!("must be a string or a function, got {}", type_name(t)),
                ));
                Asked::Nothing
            }
        },
    })
}

/// What `withLease` was given, read and checked: every problem at once.
fn read_call<'env>(
    store: &handoff_core::Store,
    claim: &Unknown<'_>,
    work: Either<JsFunction<'env>, Unknown<'env>>,
    options: Option<&Unknown<'env>>,
) -> Outcome<(ClaimRef, JsFunction<'env>, Asked<'env>)> {
    let mut problems = Vec::new();
    // Read as every method taking a claim reads it: `heartbeat`'s argument.
    let given = Given {
        positional: &[("claim", claim)],
        options: None,
    };
    let claim = arguments_of::<ops::Heartbeat>(&given)?
        .then(store.limits(), |args: ops::HeartbeatArgs| {
            args.claim.into_ref()
        });
    let claim = match claim {
        Ok(claim) => Some(claim),
        Err(Error::Validation { problems: found }) => {
            problems.extend(found);
            None
        }
        Err(other) => return Err(other.into()),
    };
    let work = match work {
        Either::A(function) => Some(function),
        Either::B(other) => {
            problems.push(Problem::new(
                "work",
                format!("must be a function, got {}", type_name(other.get_type()?)),
            ));
            None
        }
    };
    let asked = read_options(options, &mut problems)?;
    match (claim, work) {
        (Some(claim), Some(work)) if problems.is_empty() => Ok((claim, work, asked)),
        _ => Err(Failure::Core(Error::Validation { problems })),
    }
}

/// What the promise of a claim being settled settles with, on the JavaScript thread.
type Resolver = Box<dyn FnOnce(Env) -> napi::Result<Unknown<'static>> + Send>;

/// A lease whose work is running: settled once it finishes.
struct Running {
    held: Arc<Held>,
    /// The outcome when the work's value is no string (`options.outcome` as text).
    fallback: String,
}

/// What came of a promise: its value, or what it rejected with.
type Settled = Result<Unknown<'static>, Unknown<'static>>;

/// How the claim is settled.
enum Settle {
    /// Completed with `outcome`; the promise resolves to `{ result, handoff }` (`holder`
    /// holds `result`).
    Complete {
        outcome: String,
        holder: ObjectRef<false>,
    },
    /// Failed with `message`; the promise rejects with `rejection`.
    Fail { message: String, rejection: Failure },
}

/// The message a claim is failed with for `failure`.
fn message_of(failure: &Failure) -> String {
    let message = match failure {
        Failure::Js(err) => err.reason.trim().to_owned(),
        Failure::Core(err) => err.to_string(),
        Failure::Panic(message) => format!("handoff-core panicked: {message}"),
    };
    if message.is_empty() {
        NO_MESSAGE.to_owned()
    } else {
        message
    }
}

/// A failure to settle with: its message, and the failure itself to reject with.
fn failing(failure: Failure) -> Settle {
    Settle::Fail {
        message: message_of(&failure),
        rejection: failure,
    }
}

/// What a function threw (or a Promise rejected with), kept as it is; its message read without
/// running its code.
fn thrown(value: Unknown<'_>) -> Failure {
    Failure::Js(napi::Error::from_unknown_without_coercion(value))
}

impl Running {
    /// Settles the claim once the work's value (and the outcome function's answer, if one was
    /// asked) is known; the promise of what comes of it.
    fn finish(
        self,
        env: &Env,
        work: Settled,
        answer: Option<Settled>,
    ) -> napi::Result<Object<'static>> {
        let settle = match work {
            Ok(value) => self.completing(env, value, answer).unwrap_or_else(failing),
            Err(reason) => failing(thrown(reason)),
        };
        self.settle(env, settle)
    }

    /// How a claim whose work gave `value` is completed: with the outcome function's answer,
    /// or the value when it is a string, or the fallback.
    fn completing(
        &self,
        env: &Env,
        value: Unknown<'static>,
        answer: Option<Settled>,
    ) -> Outcome<Settle> {
        let outcome = match answer {
            Some(Err(reason)) => return Ok(failing(thrown(reason))),
            Some(Ok(answer)) => match answer.get_type()? {
                ValueType::String => convert::string(&answer, "outcome")?,
                t => {
                    return Err(errors::invalid(
                        "outcome",
                        format!("must give a string, gave {}", type_name(t)),
                    ));
                }
            },
            None if value.get_type()? == ValueType::String => convert::string(&value, "outcome")?,
            None => self.fallback.clone(),
        };
        let mut holder = Object::new(env)?;
        holder.set_named_property("result", value)?;
        Ok(Settle::Complete {
            outcome,
            holder: holder.create_ref::<false>()?,
        })
    }

    /// Settles the claim off the JavaScript thread; the promise of what comes of it.
    fn settle(self, env: &Env, settle: Settle) -> napi::Result<Object<'static>> {
        let Running { held, .. } = self;
        let (deferred, promise) = match env.create_deferred::<Unknown<'static>, Resolver>() {
            Ok(made) => made,
            Err(err) => {
                // Nobody to tell: the core's lease, dropped, fails the claim (`DROPPED`).
                if let Some(lease) = held.take() {
                    off_thread(Box::new(move || drop(lease)));
                }
                return Err(err);
            }
        };
        let lease = held.take();
        off_thread(Box::new(move || {
            let resolver: Resolver = match settle {
                Settle::Complete { outcome, holder } => {
                    let done: Outcome<Handoff> = match lease {
                        Some(lease) => caught(|| Ok(lease.complete(&outcome)?)),
                        None => Err(held.settled().into()),
                    };
                    Box::new(move |env| {
                        let result = holder.get_value(&env)?;
                        holder.unref(&env)?;
                        let mut result = Object::from_raw(env.raw(), result.raw());
                        match done {
                            Ok(handoff) => {
                                result.set_named_property(
                                    "handoff",
                                    output::to_js(&env, &handoff)?,
                                )?;
                                Ok(result.to_unknown())
                            }
                            Err(failure) => Err(errors::to_js(&env, failure, Naming::AsIs)),
                        }
                    })
                }
                Settle::Fail { message, rejection } => {
                    if let Some(lease) = lease {
                        // Refused when the claim is gone already: the work's error is what
                        // the caller is told either way.
                        let _ = caught(|| Ok(lease.fail(&message)?));
                    }
                    Box::new(move |env| Err(errors::to_js(&env, rejection, Naming::AsIs)))
                }
            };
            deferred.resolve(resolver);
        }));
        Ok(Object::from_raw(env.raw(), promise.raw()))
    }
}

/// The message of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Runs `work`, a panic caught as a failure.
fn caught<T>(work: impl FnOnce() -> Outcome<T>) -> Outcome<T> {
    catch_unwind(AssertUnwindSafe(work))
        .unwrap_or_else(|payload| Err(Failure::Panic(panic_message(&*payload))))
}

/// Runs `work` on a thread of its own; on this one if no thread can be started (it then blocks
/// for a store write and at most one heartbeat's).
fn off_thread(work: Box<dyn FnOnce() + Send>) {
    let slot = Arc::new(Mutex::new(Some(work)));
    let theirs = Arc::clone(&slot);
    let take = |slot: &Mutex<Option<Box<dyn FnOnce() + Send>>>| {
        slot.lock().unwrap_or_else(PoisonError::into_inner).take()
    };
    let started = std::thread::Builder::new()
        .name("handoff-lease".to_owned())
        .spawn(move || {
            if let Some(work) = take(&theirs) {
                work();
            }
        });
    if started.is_err()
        && let Some(work) = take(&slot)
    {
        work();
    }
}

/// The global `Promise`.
fn promise_class<'env>(
    env: &'env Env,
) -> napi::Result<Function<'env, Unknown<'env>, Unknown<'env>>> {
    env.get_global()?.get_named_property("Promise")
}

/// Promises `work(lease)` from a microtask: what it returns is awaited and what it throws is a
/// rejection, exactly as thrown.
fn start<'env>(
    env: &'env Env,
    work: &JsFunction<'env>,
    lease: Unknown<'env>,
) -> napi::Result<Unknown<'env>> {
    let function: Function<'env, Unknown<'env>, Unknown<'env>> =
        env.get_global()?.get_named_property("Function")?;
    // `Function.prototype` is a function itself.
    let prototype: Unknown<'env> = function.get_named_property("prototype")?;
    let bind: Function<'env, FnArgs<((), Unknown<'env>)>, Unknown<'env>> =
        prototype.coerce_to_object()?.get_named_property("bind")?;
    let bound = bind.apply(work.to_unknown(), FnArgs::from(((), lease)))?;
    then(env, PromiseRaw::<()>::resolve(env, ())?.to_unknown(), bound)
}

/// `promise.then(callback)`, with `Promise.prototype.then` itself.
fn then<'env>(
    env: &'env Env,
    promise: Unknown<'env>,
    callback: Unknown<'env>,
) -> napi::Result<Unknown<'env>> {
    let class = promise_class(env)?;
    let prototype: Object<'env> = class.get_named_property("prototype")?;
    let then: Function<'env, Unknown<'env>, Unknown<'env>> =
        prototype.get_named_property("then")?;
    then.apply(promise, callback)
}

/// Reads the entries of `Promise.allSettled`'s answer.
fn entries(answer: Unknown<'static>, count: u32) -> napi::Result<Vec<Settled>> {
    let answer = answer.coerce_to_object()?;
    (0..count)
        .map(|i| {
            let entry: Object<'_> = answer.get_element(i)?;
            let status: String = entry.get_named_property("status")?;
            Ok(if status == "fulfilled" {
                Ok(entry.get_named_property("value")?)
            } else {
                Err(entry.get_named_property("reason")?)
            })
        })
        .collect()
}

/// Awaits the work's promise (and `answer`, the outcome function's) with `Promise.allSettled`,
/// which never rejects, then settles `running`: the promise `withLease` returns.
fn awaiting<'env>(
    env: &'env Env,
    work: Unknown<'env>,
    answer: Option<Unknown<'env>>,
    running: Running,
) -> napi::Result<Unknown<'env>> {
    let awaited = (|| -> napi::Result<PromiseRaw<'env, Unknown<'static>>> {
        let class = promise_class(env)?;
        let all_settled: Function<'env, Vec<Unknown<'env>>, PromiseRaw<'env, Unknown<'static>>> =
            class.get_named_property("allSettled")?;
        all_settled.apply(class, std::iter::once(work).chain(answer).collect())
    })();
    let settled = match awaited {
        Ok(settled) => settled,
        Err(err) => {
            let promise = running.settle(env, failing(Failure::Js(err)))?;
            return Ok(promise.to_unknown());
        }
    };
    let count = if answer.is_some() { 2 } else { 1 };
    let done = settled.then(move |ctx: CallbackContext<Unknown<'static>>| {
        let CallbackContext { env, value } = ctx;
        catch_unwind(AssertUnwindSafe(move || match entries(value, count) {
            Ok(mut entries) => {
                let answer = (entries.len() > 1).then(|| entries.remove(1));
                let work = entries.remove(0);
                running.finish(&env, work, answer)
            }
            Err(err) => running.settle(&env, failing(Failure::Js(err))),
        }))
        .unwrap_or_else(|payload| {
            let message = panic_message(&*payload);
            Err(napi::Error::from_reason(format!(
                "handoff-core panicked: {message}"
            )))
        })
    })?;
    Ok(done.to_unknown())
}

#[napi]
impl Store {
    /// Holds `claim` while `work` runs: the core renews it from a thread of its own every third
    /// of its lease (the JavaScript thread is free to run the work), until `work(lease)` — sync
    /// or async, called from a microtask — returns or throws. Then, off the JavaScript thread,
    /// the claim is completed with an outcome and the Promise resolves to `{ result, handoff }`
    /// (the work's value, the completed handoff); or, when the work throws or rejects, the
    /// claim is failed with the error's message (back to pending while attempts remain) and the
    /// Promise rejects with the error itself.
    ///
    /// The outcome is the work's value when it is a string, else `options.outcome` (default
    /// `''`); when `options.outcome` is a function, its answer (or its Promise's) for the work's
    /// value, whatever that is. `lease.lost` says whether a heartbeat found the claim gone
    /// (lapsed, cancelled, taken over): completing then rejects with `LEASE_LOST`. Bad arguments
    /// reject with `VALIDATION`, every problem at once, before anything runs.
    #[napi(
        catch_unwind,
        ts_generic_types = "T",
        ts_args_type = "claim: Claim | ClaimReference, work: (lease: Lease) => T, options?: WithLeaseOptions<Awaited<T>>",
        ts_return_type = "Promise<LeaseResult<Awaited<T>>>"
    )]
    pub fn with_lease<'env>(
        &self,
        env: &'env Env,
        claim: Unknown<'_>,
        work: Either<JsFunction<'env>, Unknown<'env>>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let started =
            read_call(&store, &claim, work, options.as_ref()).and_then(|(claim, work, asked)| {
                let lease = store.lease(claim.clone())?;
                Ok((claim, lease, work, asked))
            });
        let (claim, lease, work, asked) = match started {
            Ok(started) => started,
            Err(failure) => return rejected(env, errors::to_js(env, failure, Naming::AsIs)),
        };
        let held = Arc::new(Held {
            lease: Mutex::new(Some(lease)),
            claim,
        });
        let (fallback, function) = match asked {
            Asked::Nothing => (String::new(), None),
            Asked::Text(text) => (text, None),
            Asked::Function(function) => (String::new(), Some(function)),
        };
        let running = Running {
            held: Arc::clone(&held),
            fallback,
        };
        let begun = (|| -> napi::Result<(Unknown<'env>, Option<Unknown<'env>>)> {
            let lease = Lease { held }.into_instance(env)?;
            let promise = start(env, &work, lease.to_unknown())?;
            let answer = match function {
                Some(function) => Some(then(env, promise, function.to_unknown())?),
                None => None,
            };
            Ok((promise, answer))
        })();
        match begun {
            Ok((promise, answer)) => awaiting(env, promise, answer, running),
            Err(err) => Ok(running.settle(env, failing(Failure::Js(err)))?.to_unknown()),
        }
    }
}
