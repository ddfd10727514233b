//! The `Store` class: every call of the core's `Store`, each also as a Promise (`*Async`) that
//! runs on libuv's thread pool, so the event loop never waits for SQLite.
//!
//! The store operations are the core's ([`handoff_core::ops`]): index.js defines their methods
//! from the core's catalog over [`crate::ops`]. Opening a store and its saved policy are
//! written here by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use handoff_core::ops::{Arguments, ConnectArgs};
use handoff_core::{ChainPolicy, Clock, Error, Limits, Store as CoreStore};
use napi::bindgen_prelude::{AsyncTask, JavaScriptClassExt};
use napi::{Env, JsValue, Unknown};
use napi_derive::napi;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock;
use crate::convert;
use crate::errors::{Failure, Naming, Outcome, camel_case, invalid};
use crate::output::Json;
use crate::run::{Job, ToJs, guarded};

/// A handoff store: create, claim, heartbeat, release, complete, and read the event log and
/// chains. Get one with `open(path)` or `Store.memory()`.
#[napi]
pub struct Store {
    // A store is plain shared data behind `Arc`s; a panic inside the core leaves nothing half
    // changed that a later call could observe (writes are transactions).
    inner: AssertUnwindSafe<CoreStore>,
}

impl ToJs for CoreStore {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        let store = Store {
            inner: AssertUnwindSafe(self),
        };
        Ok(store.into_instance(env)?.to_unknown())
    }
}

/// Chain limits checked before a new hop is created.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyOptions {
    /// Most hops one task may make (default 5).
    pub max_handoffs: Option<u32>,
    /// How often an agent may appear again in a task's path (default 0: A→B→A is refused).
    pub max_revisits: Option<u32>,
    /// Who may hand off to whom; leave it out (or `null`) to allow every pair.
    #[napi(ts_type = "Record<string, Array<string>> | null")]
    pub collaborators: Option<BTreeMap<String, Vec<String>>>,
}

/// Size limits applied to everything that comes from outside.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsOptions {
    /// The whole record as JSON, in bytes (default 256 KiB).
    pub max_record_bytes: Option<u32>,
    /// One text field or list item, in bytes (default 64 KiB).
    pub max_field_bytes: Option<u32>,
    /// Items in one list field (default 1024).
    pub max_list_items: Option<u32>,
    /// Nesting depth of metadata (default 64, at most 100: what every reader reads back).
    pub max_depth: Option<u32>,
}

/// How to open a store.
// Its SQLite options are read by the core's `ConnectArgs` (`read_options`); they are declared
// here for the TypeScript types and so that a name spelled otherwise is refused with the names
// `open` takes. The same goes for `JsConnectOptions`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenOptions {
    /// Decide time by this clock instead of the system's (tests, simulations).
    #[napi(ts_type = "ManualClock")]
    #[serde(default)]
    pub clock: Option<serde::de::IgnoredAny>,
    /// SQLite only: `"full"` (default) makes every commit durable before it returns;
    /// `"normal"` may lose the last commits on a power loss, not on a crash.
    #[napi(ts_type = "'full' | 'normal'")]
    pub synchronous: Option<String>,
    /// SQLite only: how long a write waits for another writer (default 60). A writer that is
    /// stopped or stuck delays others at most this long; then they fail with `BUSY`, nothing
    /// changed. Reads never wait for writers.
    pub lock_patience_seconds: Option<f64>,
    /// SQLite only: open an existing store for reading only. Nothing on disk is created,
    /// migrated or changed (an empty or foreign file is refused as it is); writes fail with
    /// `STORAGE`. For a read-only file or directory, or a reader that must not write.
    pub read_only: Option<bool>,
    /// Chain limits. Without them, those saved in the store (`savePolicy`) apply, else the
    /// defaults.
    pub policy: Option<PolicyOptions>,
    /// Size limits. Without them, those saved in the store (`savePolicy`) apply, else the
    /// defaults.
    pub limits: Option<LimitsOptions>,
}

/// How to connect to a store: `open`'s options and PostgreSQL's. Each store reads the options
/// that concern it and leaves the others, so one set of options serves every URL.
#[napi(
    object,
    js_name = "ConnectOptions",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsConnectOptions {
    /// Decide time by this clock instead of the system's (tests, simulations).
    #[napi(ts_type = "ManualClock")]
    #[serde(default)]
    pub clock: Option<serde::de::IgnoredAny>,
    /// SQLite and files: `"full"` (default) makes every commit durable before it returns;
    /// `"normal"` may lose the last commits on a power loss, not on a crash.
    #[napi(ts_type = "'full' | 'normal'")]
    pub synchronous: Option<String>,
    /// SQLite and files: how long a write waits for another process's lock (default 60); then
    /// it fails with `BUSY`, nothing changed.
    pub lock_patience_seconds: Option<f64>,
    /// SQLite only: open an existing store for reading only (writes fail with `STORAGE`). Any
    /// other URL with `readOnly: true` is a `VALIDATION` error on `readOnly`.
    pub read_only: Option<bool>,
    /// PostgreSQL: at most this many connections (a whole number, at least 1; default 8).
    pub pool_size: Option<f64>,
    /// PostgreSQL: how long connecting may take, in seconds (more than 0; default 10).
    pub connect_timeout_seconds: Option<f64>,
    /// Chain limits. Without them, those saved in the store (`savePolicy`) apply, else the
    /// defaults.
    pub policy: Option<PolicyOptions>,
    /// Size limits. Without them, those saved in the store (`savePolicy`) apply, else the
    /// defaults.
    pub limits: Option<LimitsOptions>,
}

/// The core's names of the options `open` reads: those an SQLite store reads
/// ([`ConnectArgs::sqlite`]) and `read_only`. `connect` reads every option of [`ConnectArgs`].
const OPEN_KEYS: [&str; 3] = ["synchronous", "lock_patience_seconds", "read_only"];

/// The core's names of every option of [`ConnectArgs`], from its schema.
fn connect_keys() -> &'static [String] {
    static KEYS: OnceLock<Vec<String>> = OnceLock::new();
    KEYS.get_or_init(|| {
        handoff_core::ops::arguments_schema::<ConnectArgs>()
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default()
    })
}

/// Reads the options object of `open` or `connect`: the options of `keys` (core names; the
/// caller writes them in camelCase) by the core's [`ConnectArgs`], as every face reads them,
/// and the rest (clock, policy, limits, and any name this call does not take) into `T`. Every
/// problem of both comes back at once, each named by the core's name, which [`Naming::Js`]
/// shows in camelCase.
fn read_options<T: DeserializeOwned>(
    options: &Unknown<'_>,
    keys: &[&str],
) -> Outcome<(ConnectArgs, T)> {
    let mut json: Map<String, Value> = convert::options(options, "options")?;
    let mut args = Map::new();
    for key in keys {
        // `null` is `undefined` here: the option keeps its default.
        if let Some(value) = json.remove(&camel_case(key)).filter(|v| !v.is_null()) {
            args.insert((*key).to_owned(), value);
        }
    }
    let connect = ConnectArgs::read(Value::Object(args), &Limits::default());
    let rest = convert::from_json::<T>(Value::Object(json), "options");
    match (connect, rest) {
        (Ok(connect), Ok(rest)) => Ok((connect, rest)),
        (
            Err(Error::Validation { mut problems }),
            Err(Failure::Core(Error::Validation { problems: more })),
        ) => {
            problems.extend(more);
            Err(Failure::Core(Error::Validation { problems }))
        }
        (Err(err), _) => Err(Failure::Core(err)),
        (_, Err(failure)) => Err(failure),
    }
}

/// A chain policy as the store saved it.
#[napi(
    object,
    js_name = "ChainPolicy",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[allow(dead_code)] // The TypeScript shape only: JavaScript gets the core's `ChainPolicy`.
pub struct JsChainPolicy {
    /// Most hops along one path of a task.
    pub max_handoffs: f64,
    /// How often an agent may appear again along a path.
    pub max_revisits: f64,
    /// Who may hand off to whom; `null` allows every pair.
    pub collaborators: Option<BTreeMap<String, Vec<String>>>,
}

/// Size limits as the store saved them.
#[napi(
    object,
    js_name = "Limits",
    object_from_js = false,
    object_to_js = false
)]
#[allow(dead_code)] // The TypeScript shape only: JavaScript gets the core's `Limits`.
pub struct JsLimits {
    /// The whole record as JSON, in bytes.
    pub max_record_bytes: f64,
    /// One text field or list item, in bytes.
    pub max_field_bytes: f64,
    /// Items in one list field.
    pub max_list_items: f64,
    /// Nesting depth of metadata.
    pub max_depth: f64,
}

/// The policy and limits saved in a store: also valid `open` options
/// (`open(path, store.savedPolicy())`).
#[napi(object, object_from_js = false, object_to_js = false)]
#[allow(dead_code)] // The TypeScript shape only: JavaScript gets `Saved`.
pub struct SavedPolicy {
    /// The chain policy.
    pub policy: JsChainPolicy,
    /// The size limits.
    pub limits: JsLimits,
}

fn count(value: Option<u32>, default: usize) -> usize {
    value.map_or(default, |v| v as usize)
}

/// What `open` and `Store.memory` apply to the store they open: read and checked on the
/// JavaScript thread, before anything is opened.
struct Settings {
    clock: Option<Arc<dyn Clock>>,
    policy: Option<ChainPolicy>,
    limits: Option<Limits>,
}

impl Settings {
    fn read(
        clock: Option<Arc<dyn Clock>>,
        policy: Option<&PolicyOptions>,
        limits: Option<&LimitsOptions>,
    ) -> Outcome<Settings> {
        let policy = policy.map(|p| {
            let default = ChainPolicy::default();
            ChainPolicy {
                max_handoffs: count(p.max_handoffs, default.max_handoffs),
                max_revisits: count(p.max_revisits, default.max_revisits),
                collaborators: p.collaborators.as_ref().map(|c| {
                    c.iter()
                        .map(|(from, to)| {
                            (from.clone(), to.iter().cloned().collect::<BTreeSet<_>>())
                        })
                        .collect()
                }),
            }
        });
        let limits = match limits {
            None => None,
            Some(l) => {
                let default = Limits::default();
                let limits = Limits {
                    max_record_bytes: count(l.max_record_bytes, default.max_record_bytes),
                    max_field_bytes: count(l.max_field_bytes, default.max_field_bytes),
                    max_list_items: count(l.max_list_items, default.max_list_items),
                    max_depth: count(l.max_depth, default.max_depth),
                };
                // The core would lower a `maxDepth` over its maximum silently: refuse it instead.
                limits.check().map_err(|err| match err {
                    handoff_core::Error::Validation { mut problems } => {
                        for p in &mut problems {
                            p.field = format!("limits.{}", camel_case(&p.field));
                        }
                        Failure::Core(handoff_core::Error::Validation { problems })
                    }
                    other => Failure::Core(other),
                })?;
                Some(limits)
            }
        };
        Ok(Settings {
            clock,
            policy,
            limits,
        })
    }

    /// Applies them to a freshly opened store, over what the store saved.
    fn apply(self, store: CoreStore) -> CoreStore {
        let mut store = store;
        if let Some(clock) = self.clock {
            store = store.with_clock(clock);
        }
        if let Some(policy) = self.policy {
            store = store.with_policy(policy);
        }
        if let Some(limits) = self.limits {
            store = store.with_limits(limits);
        }
        store
    }
}

fn prepare_open(
    env: &Env,
    path: &Unknown<'_>,
    options: &Unknown<'_>,
) -> Outcome<impl FnOnce() -> handoff_core::Result<CoreStore> + Send + 'static> {
    let path = convert::string(path, "path")?;
    let clock = clock::from_options(env, options)?;
    let (how, options): (_, OpenOptions) = read_options(options, &OPEN_KEYS)?;
    let sqlite = how.sqlite();
    let read_only = how.read_only;
    let settings = Settings::read(clock, options.policy.as_ref(), options.limits.as_ref())?;
    // By path, not through `connect`: any path is a file name here (`memory:x`, `files:y`),
    // where `connect` would read some of them as URLs.
    Ok(move || {
        let store = if read_only {
            CoreStore::open_read_only(&path, &sqlite)?
        } else {
            CoreStore::open_with(&path, &sqlite)?
        };
        Ok(settings.apply(store))
    })
}

/// Opens (or creates) the SQLite store at `path` (`":memory:"` for a private in-memory
/// database); with `readOnly: true`, opens an existing store without changing anything. The
/// file is shared safely by threads, worker threads and processes. The policy and limits
/// saved in the store (`savePolicy`) apply unless `options` gives its own.
#[napi(
    catch_unwind,
    ts_args_type = "path: string, options?: OpenOptions",
    ts_return_type = "Store"
)]
pub fn open(env: Env, path: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Store> {
    let inner = guarded(&env, Naming::Js, || {
        Ok(prepare_open(&env, &path, &options)?()?)
    })?;
    Ok(Store {
        inner: AssertUnwindSafe(inner),
    })
}

/// `open` as a Promise, opening (and migrating) the file off the JavaScript thread.
#[napi(
    catch_unwind,
    ts_args_type = "path: string, options?: OpenOptions",
    ts_return_type = "Promise<Store>"
)]
pub fn open_async(env: Env, path: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<CoreStore>> {
    Job::start(Naming::Js, prepare_open(&env, &path, &options))
}

fn prepare_connect(
    env: &Env,
    url: &Unknown<'_>,
    options: &Unknown<'_>,
) -> Outcome<impl FnOnce() -> handoff_core::Result<CoreStore> + Send + 'static> {
    let url = convert::string(url, "url")?;
    let clock = clock::from_options(env, options)?;
    let keys: Vec<&str> = connect_keys().iter().map(String::as_str).collect();
    let (how, options): (_, JsConnectOptions) = read_options(options, &keys)?;
    let how = how.options();
    let settings = Settings::read(clock, options.policy.as_ref(), options.limits.as_ref())?;
    Ok(move || Ok(settings.apply(CoreStore::connect_with(&url, &how)?)))
}

/// Opens the store `url` names: a path or `sqlite:PATH` (SQLite), `memory:` (a private
/// in-memory store), `files:DIR` (a folder of JSON files that processes share), or
/// `postgres://…` / `postgresql://…`, with `?schema=NAME` to keep several stores in one
/// database (default `public`). Each store reads the options that concern it: `synchronous`
/// (SQLite, files) and `lockPatienceSeconds` (also PostgreSQL), `readOnly` (SQLite only: every other URL is a
/// `VALIDATION` error on `readOnly`), `poolSize` and `connectTimeoutSeconds` (PostgreSQL). A
/// URL it cannot read is a `VALIDATION` error on `url` (or the part that is wrong: `url.schema`,
/// `url.sslmode`, `url.sslrootcert`; TLS as libpq reads `sslmode`), a bad option one on the
/// option; a server it cannot reach, or whose certificate is refused, is `STORAGE`. The policy and limits saved in the store
/// apply unless `options` gives its own. Connecting to a server blocks this thread until it
/// answers: prefer `connectAsync` there.
#[napi(
    catch_unwind,
    ts_args_type = "url: string, options?: ConnectOptions",
    ts_return_type = "Store"
)]
pub fn connect(env: Env, url: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Store> {
    let inner = guarded(&env, Naming::Js, || {
        Ok(prepare_connect(&env, &url, &options)?()?)
    })?;
    Ok(Store {
        inner: AssertUnwindSafe(inner),
    })
}

/// `connect` as a Promise, connecting (and creating or migrating the store) off the JavaScript
/// thread.
#[napi(
    catch_unwind,
    ts_args_type = "url: string, options?: ConnectOptions",
    ts_return_type = "Promise<Store>"
)]
pub fn connect_async(
    env: Env,
    url: Unknown<'_>,
    options: Unknown<'_>,
) -> AsyncTask<Job<CoreStore>> {
    Job::start(Naming::Js, prepare_connect(&env, &url, &options))
}

#[napi]
impl Store {
    /// The core's store (a cheap handle: shared data behind `Arc`s).
    pub(crate) fn core(&self) -> CoreStore {
        CoreStore::clone(&self.inner)
    }

    /// An in-memory store, for tests and ephemeral swarms. Takes the same policy and limits
    /// as `open`.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: Omit<OpenOptions, 'synchronous' | 'lockPatienceSeconds' | 'readOnly'>",
        ts_return_type = "Store"
    )]
    pub fn memory(env: Env, options: Unknown<'_>) -> napi::Result<Store> {
        let inner = guarded(&env, Naming::Js, || {
            let clock = clock::from_options(&env, &options)?;
            let options: OpenOptions = convert::options(&options, "options")?;
            if options.synchronous.is_some()
                || options.lock_patience_seconds.is_some()
                || options.read_only.is_some()
            {
                return Err(invalid(
                    "options",
                    "synchronous, lockPatienceSeconds and readOnly apply to SQLite only",
                ));
            }
            let settings = Settings::read(clock, options.policy.as_ref(), options.limits.as_ref())?;
            Ok(settings.apply(CoreStore::memory()))
        })?;
        Ok(Store {
            inner: AssertUnwindSafe(inner),
        })
    }

    /// Saves this store's chain policy and limits (those given to `open`, or the defaults) in
    /// the store itself, so that every process that opens it without its own — the CLI and the
    /// MCP server included — applies them.
    #[napi(catch_unwind)]
    pub fn save_policy(&self, env: Env) -> napi::Result<()> {
        guarded(&env, Naming::Js, || Ok(self.core().save_policy()?))
    }

    /// `savePolicy`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn save_policy_async(&self) -> AsyncTask<Job<()>> {
        let store = self.core();
        Job::start(Naming::Js, Ok(move || store.save_policy()))
    }

    /// The policy and limits saved with `savePolicy`, or `null` when none were saved.
    #[napi(catch_unwind, ts_return_type = "SavedPolicy | null")]
    pub fn saved_policy<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        guarded(env, Naming::Js, || Ok(saved_policy(&store)?))?.to_js(env)
    }

    /// `savedPolicy`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<SavedPolicy | null>")]
    pub fn saved_policy_async(&self) -> AsyncTask<Job<Json>> {
        let store = self.core();
        Job::start(Naming::Js, Ok(move || saved_policy(&store)))
    }
}

/// The policy and limits saved in `store`, as JavaScript gets them: the core's, through the
/// results' camelCase pass ([`SavedPolicy`] types them).
fn saved_policy(store: &CoreStore) -> handoff_core::Result<Json> {
    #[derive(Serialize, JsonSchema)]
    struct Saved {
        policy: ChainPolicy,
        limits: Limits,
    }
    let saved = store.saved_policy()?;
    Json::of(&saved.map(|(policy, limits)| Saved { policy, limits }))
}
