//! Curated memory (docs/design.md §9, the core's [`handoff_core::curation`]): conversations and their
//! messages, facts, branches, and what a verification, a merge and the curation log report, as
//! plain objects in the seed's snake_case, the way the core writes them (and a verifier or a
//! judge reads them); and the two operations that take a callable beside their arguments,
//! `verify` (a verifier) and `cherryPickDecisions` (a judge), with their Promise twins. The
//! other curation operations are entries of the store's operation table (`src/store.rs`).
//!
//! A callable runs on the JavaScript thread. `verify` and `cherryPickDecisions` call it there,
//! from the core's loop, and refuse one that answers with a Promise (a `TypeError`).
//! `verifyAsync` and `cherryPickDecisionsAsync` run the core's loop on a thread of their own and
//! reach the callable through a threadsafe function: each question is queued to the JavaScript
//! thread, the answer (awaited when it is a Promise) comes back through a channel, and the event
//! loop runs meanwhile. Not on libuv's pool: a pool thread waiting for the callable could hold
//! the very thread an `*Async` call inside the callable needs.
//!
//! A verifier that throws or rejects (or answers something that is no score) leaves its item as
//! it was: the core reports it in the `VerifyReport`. A judge that does ends the pick, which
//! writes nothing: its own error is thrown (or rejects the Promise) as it is.
//!
//! `contextFor` and `contextForAsync` take a third callable, `summarize`, the core's
//! [`Summarizer`]: asked to compress an item that does not fit whole, it answers a string; one
//! that throws, rejects or answers anything else leaves the item cut as without it. The core
//! asks a summarizer from any thread (it is `Send + Sync`), so `contextFor` runs the core on a
//! scoped thread of its own while the JavaScript thread, blocked in the call as for any sync
//! method, answers its questions one by one through a channel.

use std::sync::{Arc, Mutex, mpsc};

use handoff_core::context::{Summarizer, SummaryRequest};
use handoff_core::curation::{Conversation, Fact};
use handoff_core::ops::{self, ContextForArgs, JsonExtractor, JsonJudge, JsonVerifier, Operation};
use handoff_core::{Error, Limits, Problem};
use napi::bindgen_prelude::{
    CallbackContext, Either, Function, JsObjectValue, KeyCollectionMode, KeyConversion, KeyFilter,
    Object, PromiseRaw,
};
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi::{Env, JsError, JsValue, Status, Unknown, ValueType};
use napi_derive::napi;
use serde::Serialize;
use serde_json::Value;

use crate::context::PacketResult;
use crate::convert::{self, type_name};
use crate::errors::{self, Failure, Naming, Outcome};
use crate::memory::rejected;
use crate::ops::{Given, JsArguments, arguments_of};
use crate::output::{Out, plain_to_js};
use crate::run::{Job, ToJs, guarded, on_own_thread, panic_message};
use crate::store::Store;

/// The callable a method takes beside the core's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// `verify`'s, which scores each item.
    Verifier,
    /// `cherryPick`'s, which scores the pick before it is written.
    PickVerifier,
    /// `verifyBundle`'s, which scores each of a bundle's items.
    BundleVerifier,
    /// `cherryPickDecisions`'s, which says whether a message is a decision point.
    Judge,
    /// `cherryPickToFacts`'s, which draws a conversation's facts.
    Extractor,
    /// `contextFor`'s, which compresses an item that does not fit whole.
    Summarizer,
}

impl Role {
    /// Its option's name, also the verifier's name when its function has none.
    fn key(self) -> &'static str {
        match self {
            Role::Verifier | Role::PickVerifier | Role::BundleVerifier => "verifier",
            Role::Judge => "judge",
            Role::Extractor => "extractor",
            Role::Summarizer => "summarize",
        }
    }

    /// What it is called in a message.
    fn noun(self) -> &'static str {
        match self {
            Role::Verifier | Role::PickVerifier | Role::BundleVerifier => "verifier",
            Role::Judge => "judge",
            Role::Extractor => "extractor",
            Role::Summarizer => "summarize function",
        }
    }

    /// The method that calls it synchronously, and its Promise twin.
    fn methods(self) -> (&'static str, &'static str) {
        match self {
            Role::Verifier => ("verify", "verifyAsync"),
            Role::PickVerifier => ("cherryPick", "cherryPickAsync"),
            Role::BundleVerifier => ("verifyBundle", "verifyBundleAsync"),
            Role::Judge => ("cherryPickDecisions", "cherryPickDecisionsAsync"),
            Role::Extractor => ("cherryPickToFacts", "cherryPickToFactsAsync"),
            Role::Summarizer => ("contextFor", "contextForAsync"),
        }
    }

    /// Whether its error ends the whole call, which then writes nothing (and throws it as it
    /// is), rather than failing one item.
    fn ends_the_call(self) -> bool {
        match self {
            Role::Judge | Role::PickVerifier | Role::BundleVerifier | Role::Extractor => true,
            Role::Verifier | Role::Summarizer => false,
        }
    }
}

/// Asks a face's callable: JSON in, JSON out.
type Asking<'a> = &'a mut dyn FnMut(Value) -> handoff_core::Result<Value>;

/// An operation that takes a callable beside its arguments, run with it as what its role
/// makes of it (a verifier, an extractor), named as its function is.
trait WithCallable: Operation {
    /// What the callable is to it.
    const ROLE: Role;

    /// Runs the operation, asking `asking` (its name and the way to ask it) if given.
    fn run_asking(
        store: &handoff_core::Store,
        args: Self::Args,
        asking: Option<(String, Asking<'_>)>,
    ) -> handoff_core::Result<Self::Output>;
}

impl WithCallable for ops::Verify {
    const ROLE: Role = Role::Verifier;

    fn run_asking(
        store: &handoff_core::Store,
        args: ops::VerifyArgs,
        asking: Option<(String, Asking<'_>)>,
    ) -> handoff_core::Result<handoff_core::curation::VerifyReport> {
        match asking {
            None => ops::Verify::run_with(store, args, None),
            Some((name, ask)) => {
                let mut verifier = JsonVerifier::new(name, ask);
                ops::Verify::run_with(store, args, Some(&mut verifier))
            }
        }
    }
}

impl WithCallable for ops::CherryPickDecisions {
    const ROLE: Role = Role::Judge;

    fn run_asking(
        store: &handoff_core::Store,
        args: ops::CherryPickDecisionsArgs,
        asking: Option<(String, Asking<'_>)>,
    ) -> handoff_core::Result<Conversation> {
        match asking {
            None => ops::CherryPickDecisions::run_with(store, args, None),
            Some((_, ask)) => {
                let mut judge = JsonJudge(ask);
                ops::CherryPickDecisions::run_with(store, args, Some(&mut judge))
            }
        }
    }
}

impl WithCallable for ops::CherryPick {
    const ROLE: Role = Role::PickVerifier;

    fn run_asking(
        store: &handoff_core::Store,
        args: ops::CherryPickArgs,
        asking: Option<(String, Asking<'_>)>,
    ) -> handoff_core::Result<Conversation> {
        match asking {
            None => ops::CherryPick::run_with(store, args, None),
            Some((name, ask)) => {
                let mut verifier = JsonVerifier::new(name, ask);
                ops::CherryPick::run_with(store, args, Some(&mut verifier))
            }
        }
    }
}

impl WithCallable for ops::VerifyBundle {
    const ROLE: Role = Role::BundleVerifier;

    fn run_asking(
        store: &handoff_core::Store,
        args: ops::VerifyBundleArgs,
        asking: Option<(String, Asking<'_>)>,
    ) -> handoff_core::Result<handoff_core::store::Bundle> {
        match asking {
            None => ops::VerifyBundle::run_with(store, args, None),
            Some((name, ask)) => {
                let mut verifier = JsonVerifier::new(name, ask);
                ops::VerifyBundle::run_with(store, args, Some(&mut verifier))
            }
        }
    }
}

impl WithCallable for ops::CherryPickToFacts {
    const ROLE: Role = Role::Extractor;

    fn run_asking(
        store: &handoff_core::Store,
        args: ops::CherryPickToFactsArgs,
        asking: Option<(String, Asking<'_>)>,
    ) -> handoff_core::Result<Vec<Fact>> {
        match asking {
            None => ops::CherryPickToFacts::run_with(store, args, None),
            Some((name, ask)) => {
                let mut extractor = JsonExtractor::new(name, ask);
                ops::CherryPickToFacts::run_with(store, args, Some(&mut extractor))
            }
        }
    }
}

/// Runs `O` on the JavaScript thread, its callable (if any) asked there and refused when it
/// answers with a Promise.
fn call_sync<O: WithCallable>(
    store: &handoff_core::Store,
    env: &Env,
    positional: &[(&'static str, &Unknown<'_>)],
    options: Option<&Unknown<'_>>,
) -> Outcome<O::Output> {
    let read = read_call::<O>(env, positional, options, O::ROLE, store.limits())?;
    let Some(function) = read.callable else {
        return Ok(read
            .arguments
            .then(store.limits(), |args| O::run_asking(store, args, None))?);
    };
    refuse_async(env, &function, O::ROLE)?;
    let name = name_of(&function, O::ROLE)?;
    let mut asker = AskSync {
        env,
        function: &function,
        role: O::ROLE,
        stop: None,
    };
    let mut ask = |item| asker.ask(item);
    let result = read.arguments.then(store.limits(), |args| {
        O::run_asking(store, args, Some((name, &mut ask)))
    });
    finish(asker.stop, result)
}

/// Runs `O` off the JavaScript thread, as a Promise: its callable (if any, and which may be
/// async) is asked on the JavaScript thread, each answer awaited.
fn call_async<'env, O>(
    store: handoff_core::Store,
    env: &'env Env,
    positional: &[(&'static str, &Unknown<'_>)],
    options: Option<&Unknown<'env>>,
) -> napi::Result<Unknown<'env>>
where
    O: WithCallable,
    O::Args: Send + 'static,
    O::Output: Serialize + schemars::JsonSchema + Send,
{
    let read = read_call::<O>(env, positional, options, O::ROLE, store.limits()).and_then(|read| {
        let asker = match &read.callable {
            Some(function) => Some((
                name_of(function, O::ROLE)?,
                AskAsync::new(function, O::ROLE)?,
            )),
            None => None,
        };
        Ok((read.arguments, asker))
    });
    let (arguments, asker) = match read {
        Ok(read) => read,
        Err(failure) => return rejected(env, errors::to_js(env, failure, Naming::AsIs)),
    };
    let Some((name, mut asker)) = asker else {
        let job = Job::new(
            Naming::AsIs,
            Ok(move || {
                arguments
                    .then(store.limits(), |args| O::run_asking(&store, args, None))
                    .map(Out)
            }),
        );
        return Ok(env.spawn(job)?.promise_object().to_unknown());
    };
    on_own_thread(env, Naming::AsIs, move || {
        let mut ask = |item| asker.ask(item);
        let result = arguments.then(store.limits(), |args| {
            O::run_asking(&store, args, Some((name, &mut ask)))
        });
        finish(asker.stop, result).map(Out)
    })
}

/// A JavaScript function taking and returning any value.
type JsFunction<'env> = Function<'env, Unknown<'static>, Unknown<'static>>;

/// A call's arguments, read on the JavaScript thread, and the callable it was given, if any.
struct Read<'env> {
    arguments: JsArguments,
    callable: Option<JsFunction<'env>>,
}

/// Reads a call of operation `O`: its positional arguments, and its options less the
/// callable (`role`'s key), which must be a function (or left out, or `null`). A callable that
/// is none is a problem reported with the core's problems of the other arguments, all at once.
fn read_call<'env, O: Operation>(
    env: &Env,
    positional: &[(&'static str, &Unknown<'_>)],
    options: Option<&Unknown<'env>>,
    role: Role,
    limits: &Limits,
) -> Outcome<Read<'env>> {
    let mut callable = Ok(None);
    let mut rest = None;
    if let Some(options) = options {
        if options.get_type()? == ValueType::Object && !options.is_array()? {
            let (others, found) = split(env, options, role.key())?;
            rest = Some(others);
            callable = found;
        } else {
            // Not an object: read (and refused) as the options of any other call.
            rest = Some(*options);
        }
    }
    let given = Given {
        positional,
        options: Some(("options", rest.as_ref())),
    };
    let arguments = arguments_of::<O>(&given)?;
    match callable {
        Ok(callable) => Ok(Read {
            arguments,
            callable,
        }),
        Err(problem) => {
            let mut problems = match arguments.then(limits, |_: O::Args| Ok(())) {
                Err(Error::Validation { problems }) => problems,
                _ => Vec::new(),
            };
            problems.push(problem);
            Err(Failure::Core(Error::Validation { problems }))
        }
    }
}

/// The options object less its `key`, and the function found under `key` (or the problem
/// with what was found there).
#[allow(clippy::type_complexity)]
fn split<'env>(
    env: &Env,
    options: &Unknown<'env>,
    key: &'static str,
) -> Outcome<(Unknown<'env>, Result<Option<JsFunction<'env>>, Problem>)> {
    let object = options.coerce_to_object()?;
    let mut rest = Object::new(env)?;
    let names = object.get_all_property_names(
        KeyCollectionMode::OwnOnly,
        KeyFilter::Enumerable,
        KeyConversion::NumbersToStrings,
    )?;
    let mut callable = Ok(None);
    for i in 0..names.get_array_length()? {
        let name: Unknown<'_> = names.get_element(i)?;
        let is_key = name.get_type()? == ValueType::String
            && name.coerce_to_string()?.into_utf8()?.as_str()? == key;
        if !is_key {
            let value: Unknown<'_> = object.get_property_unchecked(name)?;
            rest.set_property(name, value)?;
            continue;
        }
        let found: Either<JsFunction<'env>, Unknown<'env>> = object.get_named_property(key)?;
        callable = match found {
            Either::A(function) => Ok(Some(function)),
            Either::B(other) => match other.get_type()? {
                ValueType::Undefined | ValueType::Null => Ok(None),
                t => Err(Problem::new(
                    key,
                    format!("must be a function, got {}", type_name(t)),
                )),
            },
        };
    }
    Ok((rest.to_unknown(), callable))
}

/// The name a verifier is stored under (`verified_by`): its function's, else `verifier`.
fn name_of(function: &JsFunction<'_>, role: Role) -> Outcome<String> {
    let name = function.name()?;
    Ok(if name.is_empty() {
        role.key().to_owned()
    } else {
        name
    })
}

/// A `TypeError` to throw, as JavaScript makes one.
fn type_error(env: &Env, message: String) -> Failure {
    let made = (|| -> napi::Result<napi::Error> {
        let class: Function<'_, String, Unknown<'_>> =
            env.get_global()?.get_named_property("TypeError")?;
        Ok(napi::Error::from(class.new_instance(message.clone())?))
    })();
    Failure::Js(made.unwrap_or_else(|err| err))
}

/// Refuses an `async` function given to a method that calls it synchronously, before it is
/// called at all.
fn refuse_async(env: &Env, function: &JsFunction<'_>, role: Role) -> Outcome<()> {
    let constructor = (|| -> napi::Result<String> {
        let class: Unknown<'_> = function
            .coerce_to_object()?
            .get_named_property("constructor")?;
        class.coerce_to_object()?.get_named_property("name")
    })()
    .unwrap_or_default();
    if constructor == "AsyncFunction" || constructor == "AsyncGeneratorFunction" {
        return Err(promised(env, role));
    }
    Ok(())
}

/// The `TypeError` for a callable whose answers are Promises, given to a sync method.
fn promised(env: &Env, role: Role) -> Failure {
    let (sync, promise) = role.methods();
    type_error(
        env,
        format!(
            "the {noun} answers with a Promise, which {sync} cannot wait for: use {promise} \
             for an async {noun}",
            noun = role.noun()
        ),
    )
}

/// What a callable gave back, read on the JavaScript thread.
enum Reply {
    /// Its answer, as JSON.
    Answer(Value),
    /// An answer that cannot be read as one (not JSON, NaN).
    Unreadable(Error),
    /// It threw or its Promise rejected: `how` and the error as it is.
    Failed(&'static str, napi::Error),
}

/// Reads a callable's answer as JSON; a number that is not finite is named as the core names
/// a score out of range.
fn read_answer(answer: &Unknown<'_>) -> Reply {
    let read = (|| -> Outcome<Value> {
        if answer.get_type()? == ValueType::Number {
            let n = answer.coerce_to_number()?.get_double()?;
            if !n.is_finite() {
                return Err(Failure::Core(Error::invalid(
                    "score",
                    format!("must be a number from 0 to 1, is {n}"),
                )));
            }
        }
        convert::json(answer, "answer")
    })();
    match read {
        Ok(value) => Reply::Answer(value),
        Err(Failure::Core(err)) => Reply::Unreadable(err),
        Err(Failure::Js(err)) => Reply::Failed("threw", err),
        Err(Failure::Panic(message)) => Reply::Unreadable(Error::storage(message)),
    }
}

/// What a call of a callable comes to for the core, noting in `stop` what ends the whole call
/// (a judge's error, a Promise given to a sync method).
fn settle(stop: &mut Option<Failure>, role: Role, reply: Reply) -> handoff_core::Result<Value> {
    match reply {
        Reply::Answer(value) => Ok(value),
        Reply::Unreadable(err) => Err(err),
        Reply::Failed(how, thrown) => {
            let failed = Error::invalid(role.key(), format!("{how}: {}", thrown.reason));
            if role.ends_the_call() {
                // A judge's error ends the pick (the core writes nothing): thrown as it is.
                *stop = Some(Failure::Js(thrown));
            }
            Err(failed)
        }
    }
}

/// What a call that ran the core with a callable comes to: what ended it, if anything did.
fn finish<T>(stop: Option<Failure>, result: handoff_core::Result<T>) -> Outcome<T> {
    match stop {
        Some(failure) => Err(failure),
        None => Ok(result?),
    }
}

/// Asks a callable on the JavaScript thread, from the sync methods.
struct AskSync<'a, 'env> {
    env: &'a Env,
    function: &'a JsFunction<'env>,
    role: Role,
    stop: Option<Failure>,
}

impl AskSync<'_, '_> {
    fn ask(&mut self, question: Value) -> handoff_core::Result<Value> {
        if self.stop.is_some() {
            return Err(not_asked(self.role));
        }
        let reply = self.reply(question).unwrap_or_else(|err| {
            Reply::Unreadable(Error::invalid(
                self.role.key(),
                format!("could not be asked: {err}"),
            ))
        });
        settle(&mut self.stop, self.role, reply)
    }

    fn reply(&mut self, question: Value) -> napi::Result<Reply> {
        let question = plain_to_js(self.env, &question)?;
        let answer = match self.function.call(question) {
            Ok(answer) => answer,
            Err(err) => {
                // The exception as thrown, its message read without running its code.
                let thrown = JsError::from(err).into_unknown(*self.env);
                return Ok(Reply::Failed(
                    "threw",
                    napi::Error::from_unknown_without_coercion(thrown),
                ));
            }
        };
        if answer.is_promise()? {
            // Nobody awaits it: a rejection must not end the process as an unhandled one.
            let promise: PromiseRaw<'_, Unknown<'_>> =
                PromiseRaw::new(self.env.raw(), answer.raw());
            promise.catch(|_: CallbackContext<Unknown<'_>>| Ok(()))?;
            self.stop = Some(promised(self.env, self.role));
            return Ok(Reply::Unreadable(not_asked(self.role)));
        }
        Ok(read_answer(&answer))
    }
}

/// The error of a question left unasked because an earlier answer ended the call.
fn not_asked(role: Role) -> Error {
    Error::invalid(
        role.key(),
        "was not asked: an earlier answer ended the call",
    )
}

/// A callable as a threadsafe function: questions (JSON) go in, its return value comes out.
type Threadsafe = ThreadsafeFunction<Value, Unknown<'static>, Unknown<'static>, Status, false>;

/// Asks a callable from another thread, for the `*Async` methods.
struct AskAsync {
    function: Threadsafe,
    role: Role,
    stop: Option<Failure>,
}

impl AskAsync {
    /// Made on the JavaScript thread.
    fn new(function: &JsFunction<'_>, role: Role) -> napi::Result<AskAsync> {
        let function = function
            .build_threadsafe_function::<Value>()
            .callee_handled::<false>()
            .build_callback(|ctx: ThreadsafeCallContext<Value>| {
                plain_to_js(&ctx.env, &ctx.value)
            })?;
        Ok(AskAsync {
            function,
            role,
            stop: None,
        })
    }

    /// Asks on the JavaScript thread and waits here for the answer, awaited there when it is
    /// a Promise.
    fn ask(&mut self, question: Value) -> handoff_core::Result<Value> {
        if self.stop.is_some() {
            return Err(not_asked(self.role));
        }
        let role = self.role;
        let (answers, answer) = mpsc::channel();
        let status = self.function.call_with_return_value(
            question,
            ThreadsafeFunctionCallMode::Blocking,
            move |returned, env| {
                await_answer(&env, returned, role, answers);
                Ok(())
            },
        );
        let reply = if status == Status::Ok {
            answer.recv().unwrap_or_else(|_| {
                Reply::Unreadable(Error::invalid(
                    role.key(),
                    "gave no answer: Node is shutting down",
                ))
            })
        } else {
            Reply::Unreadable(Error::invalid(
                role.key(),
                format!("could not be called ({status})"),
            ))
        };
        settle(&mut self.stop, role, reply)
    }
}

/// On the JavaScript thread: sends what the callable returned (or threw), through `answers`,
/// once it settles. Never fails: a failure to await is an answer too.
fn await_answer(
    env: &Env,
    returned: napi::Result<Unknown<'static>>,
    role: Role,
    answers: mpsc::Sender<Reply>,
) {
    let value = match returned {
        Ok(value) => value,
        Err(thrown) => {
            let _ = answers.send(Reply::Failed("threw", thrown));
            return;
        }
    };
    let awaited = (|| -> napi::Result<()> {
        // `Promise.resolve` awaits a Promise or a thenable and passes any other value on.
        let class: Function<'_, Unknown<'static>, Unknown<'static>> =
            env.get_global()?.get_named_property("Promise")?;
        let resolve: Function<'_, Unknown<'static>, PromiseRaw<'static, Unknown<'static>>> =
            class.get_named_property("resolve")?;
        let promise = resolve.apply(class, value)?;
        let on_answer = answers.clone();
        let read = promise.then(move |ctx: CallbackContext<Unknown<'static>>| {
            let _ = on_answer.send(read_answer(&ctx.value));
            Ok(())
        })?;
        let on_failure = answers.clone();
        read.catch(move |ctx: CallbackContext<Unknown<'static>>| {
            let err = napi::Error::from_unknown_without_coercion(ctx.value);
            let _ = on_failure.send(Reply::Failed("rejected", err));
            Ok(())
        })?;
        Ok(())
    })();
    if let Err(err) = awaited {
        let _ = answers.send(Reply::Unreadable(Error::invalid(
            role.key(),
            format!("could not be awaited: {err}"),
        )));
    }
}

#[napi]
impl Store {
    /// Copies the messages `fromSeq..=toSeq` of a conversation (all of it by default; the
    /// seed's `fromSequence` and `toSequence` are read too) into a new conversation on
    /// `targetBranch`; the source messages are marked `cherry_picked_to` it. A range outside
    /// the conversation is a `VALIDATION` error naming `fromSeq` or `toSeq`. With `verify`
    /// (true by default when a `verifier` is given), `verifier` scores the pick (the new
    /// conversation as `verify` hands it over) before it is written, and it is written with its
    /// verdict (verified at 0.6, invalidated below 0.4); `verify` without a verifier is a
    /// `VALIDATION` error naming `verify`. When the verifier throws, or answers no score from 0
    /// to 1, nothing is written and its error is thrown as it is.
    ///
    /// The verifier runs on this thread and must answer at once, not with a Promise (a
    /// `TypeError`): use `cherryPickAsync` for an async verifier.
    #[napi(
        catch_unwind,
        ts_args_type = "conversationId: string, targetBranch: string, options?: CherryPickOptions",
        ts_return_type = "Conversation"
    )]
    pub fn cherry_pick<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'_>,
        target_branch: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let positional = [
            ("conversation_id", &conversation_id),
            ("target_branch", &target_branch),
        ];
        let picked = guarded(env, Naming::AsIs, || {
            call_sync::<ops::CherryPick>(&store, env, &positional, options.as_ref())
        })?;
        Out(picked).to_js(env)
    }

    /// Copies a conversation's messages into a new conversation on `targetBranch`, as
    /// `cherryPick` does, as a Promise: the store works off the JavaScript thread, and
    /// `verifier` (which may be async) is called on it, its answer awaited.
    #[napi(
        catch_unwind,
        ts_args_type = "conversationId: string, targetBranch: string, options?: CherryPickAsyncOptions",
        ts_return_type = "Promise<Conversation>"
    )]
    pub fn cherry_pick_async<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'_>,
        target_branch: Unknown<'_>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<Unknown<'env>> {
        let positional = [
            ("conversation_id", &conversation_id),
            ("target_branch", &target_branch),
        ];
        call_async::<ops::CherryPick>(self.core(), env, &positional, options.as_ref())
    }

    /// Draws facts from a conversation and writes them on `targetBranch` as candidates (status
    /// `active`, for `verify` to check later): by `extractor`, called with the conversation as
    /// a verifier gets it and answering a list of facts (texts or `{ text, confidence?,
    /// source? }`) or `{ facts: [...] }`; or without one by the heuristics (sentences of the
    /// assistant's messages that state a conclusion or a decision — "the root cause is",
    /// "fixed by", "I'll", "the approach is" — or name a file or a number). When the extractor
    /// throws, or draws a fact that breaks the rules of a fact (`facts[1].text`), nothing is
    /// written and its error is thrown.
    ///
    /// The extractor runs on this thread and must answer at once, not with a Promise (a
    /// `TypeError`): use `cherryPickToFactsAsync` for an async extractor.
    #[napi(
        catch_unwind,
        ts_args_type = "conversationId: string, targetBranch: string, options?: CherryPickToFactsOptions",
        ts_return_type = "Fact[]"
    )]
    pub fn cherry_pick_to_facts<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'_>,
        target_branch: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let positional = [
            ("conversation_id", &conversation_id),
            ("target_branch", &target_branch),
        ];
        let facts = guarded(env, Naming::AsIs, || {
            call_sync::<ops::CherryPickToFacts>(&store, env, &positional, options.as_ref())
        })?;
        Out(facts).to_js(env)
    }

    /// Draws facts from a conversation, as `cherryPickToFacts` does, as a Promise: the store
    /// works off the JavaScript thread, and `extractor` (which may be async) is called on it,
    /// its answer awaited.
    #[napi(
        catch_unwind,
        ts_args_type = "conversationId: string, targetBranch: string, options?: CherryPickToFactsAsyncOptions",
        ts_return_type = "Promise<Fact[]>"
    )]
    pub fn cherry_pick_to_facts_async<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'_>,
        target_branch: Unknown<'_>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<Unknown<'env>> {
        let positional = [
            ("conversation_id", &conversation_id),
            ("target_branch", &target_branch),
        ];
        call_async::<ops::CherryPickToFacts>(self.core(), env, &positional, options.as_ref())
    }

    /// Runs the verification gate on a bundle's contents: `verifier` scores each of its facts
    /// and conversations (as `verify` scores a branch's), and the bundle records the outcome:
    /// `verification_status` `verified` when every item passed the thresholds (otherwise
    /// `draft`), `verification_score` (the mean) and `verified_by` (the verifier's function's
    /// name). Its portable form stays as it was. Without a verifier it is a `VALIDATION` error
    /// naming `verifier`; when the verifier throws, or answers no score from 0 to 1, nothing
    /// is recorded and its error is thrown as it is.
    ///
    /// The verifier runs on this thread and must answer at once, not with a Promise (a
    /// `TypeError`): use `verifyBundleAsync` for an async verifier.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, options?: VerifyBundleOptions",
        ts_return_type = "Bundle"
    )]
    pub fn verify_bundle<'env>(
        &self,
        env: &'env Env,
        id: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let bundle = guarded(env, Naming::AsIs, || {
            call_sync::<ops::VerifyBundle>(&store, env, &[("id", &id)], options.as_ref())
        })?;
        Out(bundle).to_js(env)
    }

    /// Runs the verification gate on a bundle's contents, as `verifyBundle` does, as a
    /// Promise: the store works off the JavaScript thread, and `verifier` (which may be async)
    /// is called on it, each answer awaited.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, options?: VerifyBundleAsyncOptions",
        ts_return_type = "Promise<Bundle>"
    )]
    pub fn verify_bundle_async<'env>(
        &self,
        env: &'env Env,
        id: Unknown<'_>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<Unknown<'env>> {
        call_async::<ops::VerifyBundle>(self.core(), env, &[("id", &id)], options.as_ref())
    }

    /// Copies a conversation's decision points into a new conversation on `targetBranch`: by
    /// the seed's heuristics, assistant messages that state an approach ("I'll", "let me", "the
    /// approach", "decided"), the first one after a tool that failed, and the one that leads to
    /// a tool call that succeeded. With `judge`, the judge decides instead: it is called with
    /// each message (its `index` from 0, `role`, `content`, `tool_calls`, ...) and answers
    /// `true` for a decision point. When the judge throws or answers anything but a boolean,
    /// nothing is written: its error is thrown as it is (a non-boolean is a `VALIDATION` error
    /// naming `judge`).
    ///
    /// The judge runs on this thread and must answer at once, not with a Promise (a
    /// `TypeError`): use `cherryPickDecisionsAsync` for an async judge.
    #[napi(
        catch_unwind,
        ts_args_type = "conversationId: string, targetBranch: string, options?: CherryPickDecisionsOptions",
        ts_return_type = "Conversation"
    )]
    pub fn cherry_pick_decisions<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'_>,
        target_branch: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let positional = [
            ("conversation_id", &conversation_id),
            ("target_branch", &target_branch),
        ];
        let store = self.core();
        let picked = guarded(env, Naming::AsIs, || {
            call_sync::<ops::CherryPickDecisions>(&store, env, &positional, options.as_ref())
        })?;
        Out(picked).to_js(env)
    }

    /// Copies a conversation's decision points into a new conversation on `targetBranch`, as
    /// `cherryPickDecisions` does, as a Promise: the store works off the JavaScript thread,
    /// and `judge` (which may be async) is called on it, each answer awaited. When the judge
    /// throws, rejects or answers anything but a boolean, nothing is written and the Promise
    /// rejects with its error as it is.
    #[napi(
        catch_unwind,
        ts_args_type = "conversationId: string, targetBranch: string, options?: CherryPickDecisionsAsyncOptions",
        ts_return_type = "Promise<Conversation>"
    )]
    pub fn cherry_pick_decisions_async<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'_>,
        target_branch: Unknown<'_>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<Unknown<'env>> {
        let positional = [
            ("conversation_id", &conversation_id),
            ("target_branch", &target_branch),
        ];
        call_async::<ops::CherryPickDecisions>(self.core(), env, &positional, options.as_ref())
    }

    /// Scores a branch's facts and conversations and stores the verdicts: a fact scoring at
    /// least `factThreshold` (default 0.7) is verified, a conversation at least
    /// `conversationThreshold` (default 0.6); either is invalidated below `invalidateBelow`
    /// (default 0.4). `verifier` is called with each item (`kind` `fact` or `conversation`, its
    /// `text`, its fields, and a conversation's `messages`) and answers a score from 0 to 1:
    /// a number, `[score, explanation]` or `{ score, explanation }`. Its function's name is
    /// stored as `verified_by`. Without a verifier every score is a neutral 0.5: nothing
    /// verified, nothing invalidated. An item the verifier throws on, or answers with no score
    /// from 0 to 1 (NaN, 1.5), is left as it was and reported in the report's `items` (its
    /// `error`) and `failed`.
    ///
    /// The verifier runs on this thread and must answer at once, not with a Promise (a
    /// `TypeError`; a plain function whose first answer is a Promise is asked nothing more and
    /// records a verification with no verdicts): use `verifyAsync` for an async verifier.
    #[napi(
        catch_unwind,
        ts_args_type = "branch: string, options?: VerifyOptions",
        ts_return_type = "VerifyReport"
    )]
    pub fn verify<'env>(
        &self,
        env: &'env Env,
        branch: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let report = guarded(env, Naming::AsIs, || {
            call_sync::<ops::Verify>(&store, env, &[("branch", &branch)], options.as_ref())
        })?;
        Out(report).to_js(env)
    }

    /// Scores a branch's facts and conversations and stores the verdicts, as `verify` does, as
    /// a Promise: the store works off the JavaScript thread, and `verifier` (which may be async)
    /// is called on it, each answer awaited. An item whose verifier throws or rejects is left
    /// as it was and reported.
    #[napi(
        catch_unwind,
        ts_args_type = "branch: string, options?: VerifyAsyncOptions",
        ts_return_type = "Promise<VerifyReport>"
    )]
    pub fn verify_async<'env>(
        &self,
        env: &'env Env,
        branch: Unknown<'_>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<Unknown<'env>> {
        call_async::<ops::Verify>(self.core(), env, &[("branch", &branch)], options.as_ref())
    }
}

/// A question for a summarizer and where its answer goes.
type Question = (Value, mpsc::Sender<handoff_core::Result<Value>>);

/// The core's [`Summarizer`] made of a way to ask a face's callable (JSON in, JSON out): the
/// request goes out as `{ id, title, text, budget, unit }`, and only a string comes back as a
/// summary. Anything else is an error, on which the core cuts the item instead.
struct AskingSummarizer<F>(F);

impl<F> Summarizer for AskingSummarizer<F>
where
    F: Fn(Value) -> handoff_core::Result<Value> + Send + Sync,
{
    fn summarize(&self, request: &SummaryRequest<'_>) -> handoff_core::Result<String> {
        let question = serde_json::to_value(request).map_err(|e| {
            Error::invalid(Role::Summarizer.key(), format!("could not be asked: {e}"))
        })?;
        match (self.0)(question)? {
            Value::String(summary) => Ok(summary),
            other => Err(Error::invalid(
                Role::Summarizer.key(),
                format!(
                    "must answer a string, not {}",
                    handoff_core::validate::json_kind(&other)
                ),
            )),
        }
    }
}

/// The packet `args` describe, with `summarizer` if there is one.
fn context_for(
    store: &handoff_core::Store,
    args: ContextForArgs,
    summarizer: Option<Box<dyn Summarizer>>,
) -> handoff_core::Result<handoff_core::context::Packet> {
    let mut options = args.options()?;
    options.summarizer = summarizer;
    store.context_for(&args.handoff_id, options)
}

#[napi]
impl Store {
    /// The successor's packet for a handoff, from every part of the store that knows something
    /// about it: the handoff (goal, pending steps, instructions and blockers are mandatory), its
    /// task's goal, plan and current step, the outcomes of the steps it depends on and earlier
    /// attempts' errors, who worked on the task before, the task's verified facts and key
    /// conversations, the predecessor's own findings on `task/<task>/<agent>` (marked
    /// unverified) with the tail of its latest conversation, the facts on `main` most relevant
    /// to it, the branch to continue on, and `transcript` (the framework's own, in any
    /// provider's message shape). Within `budgetTokens` (default 2000) or `budgetChars`
    /// (characters of its Markdown; not both), redacted, with the manifest of what was kept,
    /// cut, summarised and dropped: the same `Packet` as `ContextBuilder.build()`,
    /// `toMessages` included.
    ///
    /// `summarize`, if given, is asked `{ id, title, text, budget, unit }` for an item that
    /// does not fit whole and answers its summary (listed in `manifest.summarized`); when it
    /// throws or answers anything but a string, the item is cut instead. It runs on this
    /// thread and must answer at once, not with a Promise (a `TypeError`): use
    /// `contextForAsync` for an async one.
    #[napi(
        catch_unwind,
        ts_args_type = "handoffId: string, options?: ContextForOptions",
        ts_return_type = "Packet"
    )]
    pub fn context_for<'env>(
        &self,
        env: &'env Env,
        handoff_id: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let packet = guarded(env, Naming::AsIs, || {
            let read = read_call::<ops::ContextFor>(
                env,
                &[("handoff_id", &handoff_id)],
                options.as_ref(),
                Role::Summarizer,
                store.limits(),
            )?;
            let limits = store.limits().clone();
            let Some(function) = read.callable else {
                return Ok(read
                    .arguments
                    .then(&limits, |args| context_for(&store, args, None))?);
            };
            refuse_async(env, &function, Role::Summarizer)?;
            let mut asker = AskSync {
                env,
                function: &function,
                role: Role::Summarizer,
                stop: None,
            };
            let (questions, asked) = mpsc::channel::<Question>();
            let summarizer = AskingSummarizer(move |question: Value| {
                let (answers, answer) = mpsc::channel();
                if questions.send((question, answers)).is_err() {
                    return Err(not_asked(Role::Summarizer));
                }
                answer
                    .recv()
                    .unwrap_or_else(|_| Err(not_asked(Role::Summarizer)))
            });
            let arguments = read.arguments;
            let worked = std::thread::scope(|scope| {
                let core = &store;
                let worker = std::thread::Builder::new()
                    .name("handoff-context".to_owned())
                    .spawn_scoped(scope, move || {
                        let summarizer: Box<dyn Summarizer> = Box::new(summarizer);
                        arguments.then(&limits, |args| context_for(core, args, Some(summarizer)))
                    })
                    .map_err(|e| {
                        Failure::Js(napi::Error::from_reason(format!(
                            "cannot start a thread to build the packet on: {e}"
                        )))
                    })?;
                // Answered here, on the JavaScript thread, until the worker is done with the
                // summarizer (its end of the channel dropped).
                for (question, answers) in asked {
                    let _ = answers.send(asker.ask(question));
                }
                worker
                    .join()
                    .map_err(|payload| Failure::Panic(panic_message(&*payload)))
            })?;
            finish(asker.stop, worked)
        })?;
        PacketResult(packet).to_js(env)
    }

    /// The successor's packet for a handoff, as `contextFor` builds it, as a Promise: the store
    /// works off the JavaScript thread, and `summarize` (which may be async) is called on it,
    /// each answer awaited; one that throws, rejects or answers anything but a string leaves
    /// its item cut instead.
    #[napi(
        catch_unwind,
        ts_args_type = "handoffId: string, options?: ContextForAsyncOptions",
        ts_return_type = "Promise<Packet>"
    )]
    pub fn context_for_async<'env>(
        &self,
        env: &'env Env,
        handoff_id: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let read = read_call::<ops::ContextFor>(
            env,
            &[("handoff_id", &handoff_id)],
            options.as_ref(),
            Role::Summarizer,
            store.limits(),
        )
        .and_then(|read| {
            let asker = match &read.callable {
                Some(function) => Some(AskAsync::new(function, Role::Summarizer)?),
                None => None,
            };
            Ok((read.arguments, asker))
        });
        let (arguments, asker) = match read {
            Ok(read) => read,
            Err(failure) => return rejected(env, errors::to_js(env, failure, Naming::AsIs)),
        };
        let Some(asker) = asker else {
            let job = Job::new(
                Naming::AsIs,
                Ok(move || {
                    arguments
                        .then(store.limits(), |args| context_for(&store, args, None))
                        .map(PacketResult)
                }),
            );
            return Ok(env.spawn(job)?.promise_object().to_unknown());
        };
        on_own_thread(env, Naming::AsIs, move || {
            let asker = Arc::new(Mutex::new(asker));
            let asking = Arc::clone(&asker);
            let summarizer: Box<dyn Summarizer> =
                Box::new(AskingSummarizer(move |question: Value| {
                    asking
                        .lock()
                        .map_err(|_| Error::storage("the summarizer is poisoned"))?
                        .ask(question)
                }));
            let packet = arguments.then(store.limits(), |args| {
                context_for(&store, args, Some(summarizer))
            });
            let stop = asker.lock().ok().and_then(|mut asker| asker.stop.take());
            finish(stop, packet).map(PacketResult)
        })
    }
}
