//! Memory: versioned JSON documents by scope (the core's [`handoff_core::store::Memory`]), and
//! `memoryUpdate` / `memoryUpdateAsync`, the read-change-write loop whose change is a
//! JavaScript function.
//!
//! `memoryUpdate` runs the core's loop ([`handoff_core::Store::memory_update`]) on the
//! JavaScript thread, calling the function there. `memoryUpdateAsync` cannot: the function must
//! run on the JavaScript thread, and a pool thread blocked waiting for it could hold the very
//! thread a `*Async` call inside the function needs. So its loop is JavaScript
//! (`UPDATE_ASYNC`) over `memoryGetAsync` and `memoryPutAsync` with `expectedVersion`, the
//! same optimistic loop as the core's: the store is read and written off the JavaScript thread,
//! the function runs on it (awaited when it returns a Promise), and a write that finds another
//! writer came first reads and applies again.

use handoff_core::{Error, Metadata};
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, Object, This};
use napi::{Env, JsError, JsValue, Unknown, ValueType};
use napi_derive::napi;

use crate::convert::{self, type_name};
use crate::errors::{self, Failure, Naming, Outcome, invalid};
use crate::ops::{Given, JsArguments};
use crate::output::Json;
use crate::run::{guarded, sync};
use crate::store::Store;

/// How often an update reads and writes again after other writers came first before it gives
/// up with `BUSY`: the core's bound for `memory_update`.
const MAX_UPDATE_ROUNDS: u32 = handoff_core::store::MAX_MEMORY_UPDATE_ROUNDS as u32;

/// `memoryUpdateAsync`'s loop, called with the store, the scope, the change, the bound on
/// rounds and the `BUSY` error to reject with past it. Only a version conflict of the write is
/// retried: whatever the change throws, or the write refuses otherwise, rejects unchanged.
const UPDATE_ASYNC: &str = r"(async function memoryUpdateAsync(store, scope, change, rounds, busy) {
  for (let round = 0; round < rounds; round++) {
    const current = await store.memoryGetAsync(scope)
    const value = await change(current === null ? {} : current.value)
    const expectedVersion = current === null ? 0 : current.version
    try {
      return await store.memoryPutAsync(scope, value, { expectedVersion })
    } catch (err) {
      if (err === null || typeof err !== 'object' || err.code !== 'CONFLICT') throw err
    }
  }
  throw busy
})";

/// The arguments of [`UPDATE_ASYNC`]'s function.
type UpdateArgs<'env> = (
    Object<'env>,
    Unknown<'env>,
    Unknown<'env>,
    u32,
    Unknown<'env>,
);

/// The change function, checked to be one.
fn change_function<'env>(
    change: &Unknown<'env>,
) -> Outcome<Function<'env, Unknown<'env>, Unknown<'env>>> {
    match change.get_type()? {
        ValueType::Function => Ok(Function::from_unknown(*change)?),
        other => Err(invalid(
            "change",
            format!("must be a function, got {}", type_name(other)),
        )),
    }
}

#[napi]
impl Store {
    /// Changes the memory of `scope` with `change`, safely against other writers: reads the
    /// document (`{}` when none was written), calls `change` with it, and writes what it
    /// returns if nobody wrote meanwhile; otherwise reads and calls `change` again (so
    /// `change` should only compute the new document from the one it gets). When `change`
    /// throws, nothing is written and its error is thrown as it is. What `change` returns is
    /// read as `memoryPut` reads its `value`. After 10,000 rounds lost to other writers:
    /// `BUSY`.
    ///
    /// `change` runs on this thread and must return the document itself, not a Promise: use
    /// `memoryUpdateAsync` for an asynchronous `change`.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, change: (value: JsonObject) => JsonObject",
        ts_return_type = "Memory"
    )]
    pub fn memory_update(
        &self,
        env: Env,
        scope: Unknown<'_>,
        change: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        sync(&env, Naming::AsIs, || {
            let scope_text = convert::string(&scope, "scope")?;
            let change = change_function(&change)?;
            let store = self.core();
            let update = |value: Metadata| -> Outcome<Metadata> {
                let current = Json::plain(&value)?.parse(&env)?;
                let changed = change.call(current)?;
                if changed.is_promise()? {
                    return Err(invalid(
                        "change",
                        "returned a Promise: use memoryUpdateAsync for an asynchronous change",
                    ));
                }
                // Read exactly as `memoryPut(scope, value)` reads its arguments.
                let given = Given {
                    positional: &[("scope", &scope), ("value", &changed)],
                    options: None,
                };
                let arguments = JsArguments::read(&given, &[], &[], true)?;
                Ok(
                    arguments.then(store.limits(), |args: handoff_core::ops::MemoryPutArgs| {
                        Ok(args.value)
                    })?,
                )
            };
            store.memory_update(&scope_text, update)
        })
    }

    /// Changes the memory of `scope` with `change`, safely against other writers, as a
    /// Promise: reads the document (`{}` when none was written) with `memoryGetAsync`, calls
    /// `change` with it on this thread (awaiting it when it returns a Promise), and writes
    /// what it gives with `memoryPutAsync` at the version it read; when another writer came
    /// first, reads and calls `change` again (so `change` should only compute the new document
    /// from the one it gets). When `change` throws or rejects, nothing is written and the
    /// Promise rejects with its error as it is. After 10,000 rounds lost to other writers:
    /// `BUSY`.
    #[napi(
        catch_unwind,
        ts_args_type = "scope: string, change: (value: JsonObject) => JsonObject | Promise<JsonObject>",
        ts_return_type = "Promise<Memory>"
    )]
    pub fn memory_update_async<'env>(
        &self,
        env: &'env Env,
        this: This<'env>,
        scope: Unknown<'env>,
        change: Unknown<'env>,
    ) -> napi::Result<Unknown<'env>> {
        let checked = guarded(env, Naming::AsIs, || {
            let text = convert::string(&scope, "scope")?;
            change_function(&change)?;
            Ok(text)
        });
        let text = match checked {
            Ok(text) => text,
            Err(err) => return rejected(env, err),
        };
        let busy = Error::Busy {
            message: format!(
                "memory {text} changed under every one of {MAX_UPDATE_ROUNDS} updates"
            ),
        };
        let busy =
            JsError::from(errors::to_js(env, Failure::Core(busy), Naming::AsIs)).into_unknown(*env);
        let update: Function<'env, FnArgs<UpdateArgs<'env>>, Unknown<'env>> =
            env.run_script(UPDATE_ASYNC)?;
        update.call((this.object, scope, change, MAX_UPDATE_ROUNDS, busy).into())
    }
}

/// A Promise rejected with `err`: how a `*Async` call reports arguments it cannot take.
pub(crate) fn rejected<'env>(env: &'env Env, err: napi::Error) -> napi::Result<Unknown<'env>> {
    let value = JsError::from(err).into_unknown(*env);
    let promise: Function<'env, Unknown<'env>, Unknown<'env>> =
        env.get_global()?.get_named_property("Promise")?;
    let reject: Function<'env, Unknown<'env>, Unknown<'env>> =
        promise.get_named_property("reject")?;
    reject.apply(promise, value)
}
