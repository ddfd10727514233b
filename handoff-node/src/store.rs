//! The `Store` class: every call of the core's `Store`, each also as a Promise (`*Async`) that
//! runs on libuv's thread pool, so the event loop never waits for SQLite.
//!
//! The store operations are the core's ([`handoff_core::ops`]): each is one entry of
//! `store_operations!` (in [`crate::ops`]), which declares both methods. Opening a store and its
//! saved policy are written here by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use handoff_core::{
    Capabilities, ChainPolicy, CheckReport, Claim, Clock, ConnectOptions as CoreConnectOptions,
    Damage, Limits, Problem, SqliteOptions, Store as CoreStore, Synchronous,
};
use napi::bindgen_prelude::{AsyncTask, JavaScriptClassExt};
use napi::{Env, JsValue, Unknown};
use napi_derive::napi;
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::convert::{self, MAX_SAFE_INTEGER};
use crate::errors::{Failure, Naming, Outcome, camel_case, invalid};
use crate::ops::store_operations;
use crate::record::JsHandoff;
use crate::task::{Job, Mirror, ToJs, guarded, sync};

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

/// A live claim: the handoff as claimed, the public fencing token and the claim's secret.
///
/// `heartbeat`, `release`, `complete` and `cancelClaim` read only `handoffId`, `token`,
/// `secret` and `leaseSeconds` of it, so a process that was handed those four values settles
/// the claim with the plain object `{ handoffId, token, secret, leaseSeconds }` (a
/// `ClaimReference`).
#[napi(
    object,
    js_name = "Claim",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsClaim {
    /// The handoff, as it was when claimed.
    pub handoff: JsHandoff,
    /// The claimed handoff's id (`handoff.id`).
    pub handoff_id: String,
    /// The fencing token: public (records show it as `claimToken`), for fencing writes
    /// downstream. It grows by one with every claim of the handoff, so it stays far below 2^53.
    pub token: f64,
    /// The claim's secret (`hcs_` and 64 hex digits): proof of holding the claim, shown to the
    /// claimer only and never by `get`, `list` or events. Keep it as you would a password.
    pub secret: String,
    /// The lease length in seconds; `heartbeat` extends the lease by this much.
    pub lease_seconds: f64,
}

impl Mirror for Claim {
    type Out = JsClaim;
    fn mirror(self) -> JsClaim {
        JsClaim {
            handoff_id: self.handoff.id.clone(),
            token: self.token as f64,
            secret: self.secret.expose().to_owned(),
            lease_seconds: self.lease.as_secs_f64(),
            handoff: self.handoff.into(),
        }
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

/// How a store opens, as `open` and `connect` take it (camelCase).
#[derive(Default)]
struct HowToOpen<'a> {
    synchronous: Option<&'a str>,
    lock_patience_seconds: Option<f64>,
    read_only: Option<bool>,
    pool_size: Option<f64>,
    connect_timeout_seconds: Option<f64>,
}

impl HowToOpen<'_> {
    /// The core's options, every bad one reported at once by its name; the defaults are the
    /// core's.
    fn read(&self) -> Outcome<CoreConnectOptions> {
        let mut options = CoreConnectOptions {
            read_only: self.read_only.unwrap_or(false),
            ..CoreConnectOptions::default()
        };
        let mut problems = Vec::new();
        if let Some(sync) = self.synchronous {
            match sync.parse::<Synchronous>() {
                Ok(sync) => options.synchronous = sync,
                Err(err) => problems.extend(err.problems().iter().cloned()),
            }
        }
        if let Some(seconds) = self.lock_patience_seconds {
            match Duration::try_from_secs_f64(seconds) {
                Ok(patience) => options.lock_patience = patience,
                Err(_) => problems.push(Problem::new(
                    "lockPatienceSeconds",
                    "must be a non-negative number of seconds",
                )),
            }
        }
        if let Some(size) = self.pool_size {
            if size.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER).contains(&size) {
                options.pool_size = size as usize;
            } else {
                problems.push(Problem::new(
                    "poolSize",
                    "must be a whole number at least 1",
                ));
            }
        }
        if let Some(seconds) = self.connect_timeout_seconds {
            // A zero timeout would fail every connect.
            match Duration::try_from_secs_f64(seconds) {
                Ok(timeout) if !timeout.is_zero() => options.connect_timeout = timeout,
                Err(_) if seconds > 0.0 => options.connect_timeout = Duration::MAX,
                _ => problems.push(Problem::new(
                    "connectTimeoutSeconds",
                    "must be more than 0 seconds",
                )),
            }
        }
        if problems.is_empty() {
            Ok(options)
        } else {
            Err(Failure::Core(handoff_core::Error::Validation { problems }))
        }
    }
}

/// What a store can do beyond what every store does, so that a program can ask before relying
/// on it.
#[napi(
    object,
    js_name = "Capabilities",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsCapabilities {
    /// The store outlives the process that opened it.
    pub durable: bool,
    /// Several processes on one machine may share the store.
    pub shared_by_processes: bool,
    /// Processes on several machines may share the store.
    pub shared_by_machines: bool,
    /// `backup` writes a consistent copy while the store stays in use.
    pub backup: bool,
    /// A worker waiting in `claimNext` with `waitSeconds` is woken when work arrives, instead
    /// of looking again at short intervals.
    pub wakes_waiters: bool,
}

impl Mirror for Capabilities {
    type Out = JsCapabilities;
    fn mirror(self) -> JsCapabilities {
        // Destructured in full: a capability the core adds fails to compile here until mapped.
        let Capabilities {
            durable,
            shared_by_processes,
            shared_by_machines,
            backup,
            wakes_waiters,
        } = self;
        JsCapabilities {
            durable,
            shared_by_processes,
            shared_by_machines,
            backup,
            wakes_waiters,
        }
    }
}

/// One piece of damage `check` found.
#[napi(
    object,
    js_name = "Damage",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsDamage {
    /// What is damaged: a file of a files store (`handoffs/<id>.json`, `events.jsonl line 7`),
    /// or a part of a database store (`handoffs`, `integrity`).
    pub what: String,
    /// What is wrong with it.
    pub problem: String,
    /// What the repair did about it (`moved to quarantine/...`); `null` when it was not
    /// repaired (not asked to, or a damage no repair in place can mend).
    pub repaired: Option<String>,
}

/// What `check` found: nothing damaged when `damage` is empty.
#[napi(
    object,
    js_name = "CheckReport",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsCheckReport {
    /// Each damage, in the order it was found.
    pub damage: Vec<JsDamage>,
}

impl Mirror for CheckReport {
    type Out = JsCheckReport;
    fn mirror(self) -> JsCheckReport {
        let damage = self
            .damage
            .into_iter()
            .map(|d| {
                // Destructured in full: a field the core adds fails to compile here until mapped.
                let Damage {
                    what,
                    problem,
                    repaired,
                } = d;
                JsDamage {
                    what,
                    problem,
                    repaired,
                }
            })
            .collect();
        JsCheckReport { damage }
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
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
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
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
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
#[derive(Serialize)]
pub struct SavedPolicy {
    /// The chain policy.
    pub policy: JsChainPolicy,
    /// The size limits.
    pub limits: JsLimits,
}

impl Mirror for (ChainPolicy, Limits) {
    type Out = SavedPolicy;
    fn mirror(self) -> SavedPolicy {
        let (policy, limits) = self;
        let n = |n: usize| (n as f64).min(MAX_SAFE_INTEGER);
        SavedPolicy {
            policy: JsChainPolicy {
                max_handoffs: n(policy.max_handoffs),
                max_revisits: n(policy.max_revisits),
                collaborators: policy.collaborators.map(|c| {
                    c.into_iter()
                        .map(|(from, to)| (from, to.into_iter().collect()))
                        .collect()
                }),
            },
            limits: JsLimits {
                max_record_bytes: n(limits.max_record_bytes),
                max_field_bytes: n(limits.max_field_bytes),
                max_list_items: n(limits.max_list_items),
                max_depth: n(limits.max_depth),
            },
        }
    }
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
    let options: OpenOptions = convert::options(options, "options")?;
    let how = HowToOpen {
        synchronous: options.synchronous.as_deref(),
        lock_patience_seconds: options.lock_patience_seconds,
        read_only: options.read_only,
        ..HowToOpen::default()
    }
    .read()?;
    let sqlite = SqliteOptions {
        synchronous: how.synchronous,
        lock_patience: how.lock_patience,
    };
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
    let options: JsConnectOptions = convert::options(options, "options")?;
    let how = HowToOpen {
        synchronous: options.synchronous.as_deref(),
        lock_patience_seconds: options.lock_patience_seconds,
        read_only: options.read_only,
        pool_size: options.pool_size,
        connect_timeout_seconds: options.connect_timeout_seconds,
    }
    .read()?;
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
    pub fn saved_policy(&self, env: Env) -> napi::Result<Unknown<'static>> {
        sync(&env, Naming::Js, || Ok(self.core().saved_policy()?))
    }

    /// `savedPolicy`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<SavedPolicy | null>")]
    pub fn saved_policy_async(&self) -> AsyncTask<Job<Option<(ChainPolicy, Limits)>>> {
        let store = self.core();
        Job::start(Naming::Js, Ok(move || store.saved_policy()))
    }
}

// Every store operation described by the core (`handoff_core::ops`): one entry each, giving the
// method's doc, its name and its `*Async` twin's, the core operation, the parameters taken by
// position with their TypeScript types, the options object (`?` when it may be left out; its type
// is generated from the core's schema by `scripts/gen-types.mjs`) and the TypeScript return types.
store_operations! {
    "Creates a pending handoff. With a caller-supplied `id`, creating again with the same"
    "content returns the stored record; with other content it fails with `CONFLICT`."
    create, create_async = Create(; options: "CreateOptions")
        -> "Handoff", "Promise<Handoff>";

    "Creates several handoffs in one transaction: all of them, or none when one is refused."
    create_many, create_many_async = CreateMany(items: "CreateOptions[]")
        -> "Handoff[]", "Promise<Handoff[]>";

    "The handoff with this id; `NOT_FOUND` if there is none."
    get, get_async = Get(id: "string") -> "Handoff", "Promise<Handoff>";

    "Handoffs matching the filter, oldest first."
    list, list_async = List(; options?: "ListOptions")
        -> "Handoff[]", "Promise<Handoff[]>";

    "Claims the handoff `id` for `agent`. `ALREADY_CLAIMED` while another claim is live;"
    "`INVALID_TRANSITION` when it is finished or addressed to another agent."
    claim, claim_async = Claim(id: "string", agent: "string"; options?: "ClaimOptions")
        -> "Claim", "Promise<Claim>";

    "Claims the oldest pending handoff `agent` may take (addressed to it or to anyone);"
    "`null` when there is none. With `waitSeconds`, waits up to that long for work to arrive"
    "(woken at once on PostgreSQL, by a 50 ms poll elsewhere): `claimNext` blocks the"
    "JavaScript thread meanwhile, `claimNextAsync` waits on a thread of its own."
    claim_next, claim_next_async = ClaimNext(agent: "string"; options?: "ClaimNextOptions")
        -> "Claim | null", "Promise<Claim | null>";

    "Extends the claim's lease by its `leaseSeconds`, counted from now. `LEASE_LOST` when"
    "the token is no longer current."
    heartbeat, heartbeat_async = Heartbeat(claim: "Claim | ClaimReference")
        -> "Handoff", "Promise<Handoff>";

    "Gives the handoff back: pending again, one more attempt counted. `LEASE_LOST` when the"
    "token is no longer current."
    release, release_async =
        Release(claim: "Claim | ClaimReference"; options: "ReleaseOptions")
        -> "Handoff", "Promise<Handoff>";

    "Reports that the work failed: pending again with one more attempt counted, or `failed`"
    "(the error its outcome) after the last of its `maxAttempts`. `LEASE_LOST` when the token"
    "is no longer current."
    fail, fail_async = Fail(claim: "Claim | ClaimReference"; options: "FailOptions")
        -> "Handoff", "Promise<Handoff>";

    "Finishes the handoff. `LEASE_LOST` when the token is no longer current."
    complete, complete_async =
        Complete(claim: "Claim | ClaimReference"; options?: "CompleteOptions")
        -> "Handoff", "Promise<Handoff>";

    "Refuses the handoff as `agent`, its addressee (or, for an open handoff, its holder)."
    reject, reject_async = Reject(id: "string", agent: "string"; options: "RejectOptions")
        -> "Handoff", "Promise<Handoff>";

    "Withdraws a pending or claimed handoff, as `by`: its creator (`fromAgent`), or anyone"
    "when it has none; anyone else gets `INVALID_TRANSITION`. Its holder cancels with"
    "`cancelClaim(claim)`."
    cancel, cancel_async = Cancel(id: "string", by: "string"; options?: "CancelOptions")
        -> "Handoff", "Promise<Handoff>";

    "Withdraws the handoff as its holder, with its claim (the claim or its reference)."
    "`LEASE_LOST` when the token is no longer current or the secret does not match."
    cancel_claim, cancel_claim_async =
        CancelClaim(claim: "Claim | ClaimReference"; options?: "CancelClaimOptions")
        -> "Handoff", "Promise<Handoff>";

    // `events` and `eventsAsync` are written in src/machine.rs: they redact unless told not to.

    "The task's chain of hops, oldest first."
    chain, chain_async = Chain(task_id: "string") -> "Chain", "Promise<Chain>";

    "Saves `agent`'s progress on `taskId` without changing who owns what (a finished record"
    "of kind `checkpoint`, never claimable, not a hop)."
    checkpoint, checkpoint_async =
        Checkpoint(task_id: "string", agent: "string"; fields: "CheckpointFields")
        -> "Handoff", "Promise<Handoff>";

    "Task ids in progress whose last sign of life (claim, heartbeat, checkpoint) is older"
    "than `olderThanSeconds`."
    stalled, stalled_async = Stalled(older_than_seconds: "number")
        -> "string[]", "Promise<string[]>";

    "Per from→to pair: how many hand-offs, how many completed, failed or rejected, and the"
    "median seconds from creation to the first claim and to completion."
    stats, stats_async = Stats() -> "PathStats[]", "Promise<PathStats[]>";

    "The queue at a glance: how many handoffs are in each status, per addressee."
    queue_counts, queue_counts_async = QueueCounts() -> "QueueCount[]", "Promise<QueueCount[]>";

    "Applies every due time-driven change (lapsed leases, expired handoffs); returns how many"
    "handoffs changed. `claimNext` does this for a small batch itself."
    reap, reap_async = Reap() -> "number", "Promise<number>";

    "Writes a portable backup of the whole store to `path` (a new file, readable by its owner"
    "only; an existing one is refused with `VALIDATION`) while the store stays in use: any"
    "store restores it with `restore`."
    backup, backup_async = Backup(path: "string") -> "void", "Promise<void>";

    "Restores the backup at `path` into this store, which must be empty; a damaged or foreign"
    "file is refused with `VALIDATION` naming `path`, and nothing is written."
    restore, restore_async = Restore(path: "string") -> "void", "Promise<void>";

    "Looks through the whole store for damage (files deleted, emptied or edited by hand, links"
    "planted, a bad disk) and names each piece; with `repair: true` a files store moves what is"
    "damaged into its `quarantine/` folder and mends what referred to it (a database store"
    "reports only: restore a backup)."
    check, check_async = Check(; options?: "CheckOptions") -> "CheckReport", "Promise<CheckReport>";

    "What this store can do beyond what every store does: whether it outlives the process,"
    "can be shared by processes or machines, writes backups, wakes waiting workers."
    capabilities, capabilities_async = Capabilities() -> "Capabilities", "Promise<Capabilities>";

    "Creates a task (status `pending`) with its plan, checked whole: every problem at once"
    "(duplicate step ids, unknown dependencies, cycles named as a path, agent names, sizes),"
    "each named by its place (`steps[2].dependencies[0]`); nothing is written when there is"
    "one. `startTask` offers its first steps. With `id`, the task's id is the caller's (its"
    "branch `task/<id>`; taken already: refused); `goal` defaults to the name; each of"
    "`objectives` becomes a step `\"1\"`, `\"2\"`, ... without an agent, offered to the task's"
    "members (`joinTask`)."
    create_task, create_task_async = CreateTask(; options: "CreateTaskOptions")
        -> "Task", "Promise<Task>";

    "Starts a pending task: the steps that wait for nothing are offered as handoffs to their"
    "agents, who take them with `claimNext`."
    start_task, start_task_async = StartTask(id: "string") -> "Task", "Promise<Task>";

    "The task with this id, with its plan and each step's status; `NOT_FOUND` if there is"
    "none."
    get_task, get_task_async = GetTask(id: "string") -> "Task", "Promise<Task>";

    "Task summaries (no steps), oldest first. Read many in pages: pass the last one's `id` as"
    "`after` and a `limit`, until a page comes back empty."
    list_tasks, list_tasks_async = ListTasks(; options?: "ListTasksOptions")
        -> "TaskSummary[]", "Promise<TaskSummary[]>";

    "Changes a task if it is still at `expectedVersion` (its `version` when read), else"
    "`CONFLICT` with the error's `expected` and `actual` versions, nothing changed. Each field"
    "of `changes` replaces the task's; `addSteps` extends its plan (checked with the plan,"
    "every problem at once)."
    update_task, update_task_async =
        UpdateTask(id: "string", expected_version: "number"; changes?: "TaskChanges")
        -> "Task", "Promise<Task>";

    "`agent` joins a task, with an optional `role`; the steps named in `objectives` (ids, or"
    "numbers as the objectives are numbered: `1` is step `\"1\"`), which must have no agent,"
    "are assigned to it and offered to it alone. Its branch is `task/<id>/<agent>` (the"
    "task's `members`); the log shows an `agent_join`. Steps without an agent are offered to"
    "the task's members only: joining is how an agent may take them."
    join_task, join_task_async = JoinTask(id: "string", agent: "string"; options?: "JoinTaskOptions")
        -> "Task", "Promise<Task>";

    "Runs a task again: a new pending task with the plan of `taskId` (or of the task"
    "`bundleId` was made from), with other `agents` (by step id or earlier agent),"
    "`instructions` (by step id) or `context` (merged over the earlier one); its branch starts"
    "with the earlier run's verified knowledge and its metadata names the earlier run"
    "(`rerun_of`), so that `compare` sets the two side by side."
    rerun_task, rerun_task_async = RerunTask(; options: "RerunTaskOptions")
        -> "Task", "Promise<Task>";

    "Completes a task on its caller's word, with `resultSummary` (its history's summary): the"
    "steps nobody holds that are not done are skipped, their offers and escalations"
    "withdrawn; a step a worker holds refuses it. With `mergeToMain`, in the same"
    "transaction, the verified facts and the verified or cherry-picked conversations of every"
    "branch of the task reach `main` (the log shows a `merge`); unverified items stay."
    complete_task, complete_task_async =
        CompleteTask(id: "string"; options?: "CompleteTaskOptions")
        -> "Task", "Promise<Task>";

    "Fails a task for `reason` (required): offers and escalations nobody holds are withdrawn"
    "and its unfinished steps cancelled (steps already claimed may finish); its history says"
    "it failed, and its `failure` why."
    fail_task, fail_task_async = FailTask(id: "string", reason: "string")
        -> "Task", "Promise<Task>";

    "The holder of a step hands it on, with its claim, as an `escalation` handoff to"
    "`toAgent`, linked to the step: it carries `instructions`, `blockers` and `priorityItems`,"
    "and its successor packet what the holder knew; completing it completes the step. The"
    "holder's handoff completes, saying so. Returns the escalation. `INVALID_TRANSITION` for a"
    "handoff that carries no step."
    escalate_step, escalate_step_async =
        EscalateStep(claim: "Claim | ClaimReference", to_agent: "string"; options?: "EscalateStepOptions")
        -> "Handoff", "Promise<Handoff>";

    "Pauses a task: its offers nobody holds are withdrawn and no step is offered until it"
    "resumes; steps already claimed may finish."
    pause_task, pause_task_async = PauseTask(id: "string") -> "Task", "Promise<Task>";

    "Resumes a paused task: the steps it withdrew or whose dependencies finished meanwhile are"
    "offered. A task that cannot go on (every open step waits for an escalation) is refused,"
    "naming the escalations and what to call."
    resume_task, resume_task_async = ResumeTask(id: "string") -> "Task", "Promise<Task>";

    "Cancels a task: offers nobody took are withdrawn and its unfinished steps cancelled;"
    "steps already claimed may finish."
    cancel_task, cancel_task_async = CancelTask(id: "string"; options?: "CancelTaskOptions")
        -> "Task", "Promise<Task>";

    "Reports that a step's work failed, with its claim: the step is offered again while"
    "attempts remain, then escalated to the task's `escalateTo` (the task paused until"
    "`resolveEscalation`). `INVALID_TRANSITION` for a handoff that carries no step."
    fail_step, fail_step_async =
        FailStep(claim: "Claim | ClaimReference"; options: "FailStepOptions")
        -> "Handoff", "Promise<Handoff>";

    "A human's answer to a step that failed on every attempt, given with the escalation's"
    "claim: the escalation completes with `resolution`, and the step is offered again with"
    "its attempts reset (`retry: true`) or skipped (the default), its dependents going on"
    "without it; a task the escalation paused resumes."
    resolve_escalation, resolve_escalation_async =
        ResolveEscalation(claim: "Claim | ClaimReference"; options: "ResolveEscalationOptions")
        -> "Task", "Promise<Task>";

    "The task's log, oldest first: created, started, each agent that joined, each step"
    "offered, started, completed, failed, escalated or skipped, paused, resumed, updated,"
    "cancelled, completed or failed, merged."
    task_events, task_events_async = TaskEvents(id: "string")
        -> "TaskEvent[]", "Promise<TaskEvent[]>";

    "Finished tasks, newest first: how each ended (`success`, `partial` with skipped steps,"
    "`failure`), its duration, steps, retries and the tokens its workers reported."
    task_history, task_history_async = TaskHistory(; options?: "TaskHistoryOptions")
        -> "HistoryEntry[]", "Promise<HistoryEntry[]>";

    "Statistics over every finished task: how many, the share that succeeded, the mean"
    "duration, and how many ended each way."
    task_statistics, task_statistics_async = TaskStatistics()
        -> "TaskStatistics", "Promise<TaskStatistics>";

    "Keeps the steps, log and handoffs of the newest `keepLast` finished tasks (default 100)"
    "finished less than `keepDetailsDays` ago (default 30); older finished tasks keep only"
    "their summary, their history. Unfinished tasks are never touched. Returns how many tasks"
    "were pruned."
    prune, prune_async = Prune(; options?: "PruneOptions")
        -> "number", "Promise<number>";

    "The memory of `scope` (`agent:writer`, `session:s1`, `shared`, ...) with its version;"
    "`null` when none was written."
    memory_get, memory_get_async = MemoryGet(scope: "string")
        -> "Memory | null", "Promise<Memory | null>";

    "Writes the memory of `scope`. With `expectedVersion` (0: nothing written yet) the write"
    "happens only if the scope is still at that version, else `CONFLICT` with the error's"
    "`expected` and `actual` versions. `memoryUpdate` does the read-change-write for you."
    memory_put, memory_put_async =
        MemoryPut(scope: "string", value: "JsonObject"; options?: "MemoryPutOptions")
        -> "Memory", "Promise<Memory>";

    "Every scope's memory whose scope starts with `prefix` (all without one), in scope order."
    memory_list, memory_list_async = MemoryList(; options?: "MemoryListOptions")
        -> "Memory[]", "Promise<Memory[]>";

    "Forgets the memory of `scope`; with `expectedVersion`, only if it is still at it"
    "(`CONFLICT` otherwise). Whether there was anything to forget."
    memory_delete, memory_delete_async =
        MemoryDelete(scope: "string"; options?: "MemoryDeleteOptions")
        -> "boolean", "Promise<boolean>";

    "Who currently owns a conversation (the holder of its latest handoff once taken, else its"
    "sender), its handoffs as hops, and its shared context (the memory `session:<sessionId>`)."
    session, session_async = Session(session_id: "string") -> "Session", "Promise<Session>";

    "Starts a manager/worker run on `taskId` (DESIGN §8): the initialization (iteration 1) goes"
    "to `worker`, who takes it with `claimNext` and answers with `report` or `reportError`. The"
    "manager → worker checks run first (instructions given, at least one success criterion),"
    "every problem at once; a task runs the protocol once. `context` and the bodies the run's"
    "messages carry keep the seed's snake_case names."
    initialize, initialize_async = Initialize(task_id: "string"; options: "InitializeOptions")
        -> "Handoff", "Promise<Handoff>";

    "The worker's report on the instructions it holds (its claim): a `progress` message goes to"
    "the manager. The worker → manager checks run first: every changed file described, issues"
    "given unless the status is COMPLETED."
    report, report_async =
        Report(claim: "Claim | ClaimReference", status: "WorkerStatus"; options?: "ReportOptions")
        -> "Handoff", "Promise<Handoff>";

    "The manager's decision on the report (or the human's resolution) it holds: CONTINUE and"
    "REFINE send `instructions` to the worker for the next iteration (past `maxIterations`, an"
    "escalation instead); ESCALATE sends `escalationDetails` to whoever the run escalates to;"
    "COMPLETE ends the run and returns `null`."
    decide, decide_async =
        Decide(claim: "Claim | ClaimReference", decision: "Decision"; options?: "DecideOptions")
        -> "Handoff | null", "Promise<Handoff | null>";

    "The worker's error report on the instructions it holds: an `error_recovery` message goes"
    "to the manager, who answers with `recover` or `escalate`."
    report_error, report_error_async =
        ReportError(claim: "Claim | ClaimReference"; options: "ReportErrorOptions")
        -> "Handoff", "Promise<Handoff>";

    "The manager's recovery steps for the error report it holds: an `error_recovery` message"
    "goes to the worker with one retry more; past `maxRetries` the run escalates instead."
    recover, recover_async = Recover(claim: "Claim | ClaimReference"; options: "RecoverOptions")
        -> "Handoff", "Promise<Handoff>";

    "The manager hands the run to a human: an `escalation` goes to whoever the run escalates"
    "to, with the whole history (`complete_history`) and where the work stands"
    "(`current_state`)."
    escalate, escalate_async =
        Escalate(claim: "Claim | ClaimReference"; options: "EscalateOptions")
        -> "Handoff", "Promise<Handoff>";

    "A human's answer to the escalation they hold: a `progress` message carrying it goes to the"
    "manager, who decides how the worker goes on; the run's iteration and retry allowances"
    "start afresh."
    resolve, resolve_async =
        Resolve(claim: "Claim | ClaimReference", resolution: "string"; options?: "ResolveOptions")
        -> "Handoff", "Promise<Handoff>";

    "A task's protocol run as it stands: its phase (who holds the latest message), iteration,"
    "retries, escalations, history and the id of the message in flight; `NOT_FOUND` if the"
    "task has no run."
    protocol_run, protocol_run_async = ProtocolRun(task_id: "string")
        -> "ProtocolRun", "Promise<ProtocolRun>";

    "The messages of a task's run, oldest first: each a handoff with its `protocol` body."
    protocol_history, protocol_history_async = ProtocolHistory(task_id: "string")
        -> "Handoff[]", "Promise<Handoff[]>";

    "How the store's protocol runs went: runs, completions, the first-try completion rate, the"
    "escalation rate, retries, iterations per run, the median time per iteration, and each run."
    protocol_stats, protocol_stats_async = ProtocolStats()
        -> "ProtocolStats", "Promise<ProtocolStats>";

    "Writes a conversation on `branch` (`main`, `task/<taskId>` or `task/<taskId>/<agent>`,"
    "created on first use), its messages numbered from 1 (`seq`). Messages come in OpenAI's chat"
    "shape (`{ role, content, tool_calls?, tool_call_id? }`) or as Responses API and"
    "`@openai/agents` items, Anthropic messages or LangChain message dicts. Checked whole: a"
    "bad branch or message (named `[i]`, relative to `messages`) writes nothing. The"
    "conversation and everything curation returns keep the seed's snake_case keys."
    add_conversation, add_conversation_async = AddConversation(
        branch: "string", messages: "Array<ContextMessage | object>"; options?: "AddConversationOptions"
    ) -> "Conversation", "Promise<Conversation>";

    "Adds messages at the end of a conversation, numbered after its last; read as"
    "`addConversation` reads them."
    append_messages, append_messages_async = AppendMessages(
        conversation_id: "string", messages: "Array<ContextMessage | object>"
    ) -> "Conversation", "Promise<Conversation>";

    "The conversation with this id; `NOT_FOUND` if there is none."
    get_conversation, get_conversation_async = GetConversation(id: "string")
        -> "Conversation", "Promise<Conversation>";

    "A conversation's messages `fromSeq..=toSeq` (all of them by default), in order, each with"
    "its `seq` and where it was cherry-picked to (`is_cherry_picked`, `cherry_picked_to`)."
    messages, messages_async = Messages(id: "string"; options?: "MessagesOptions")
        -> "StoredMessage[]", "Promise<StoredMessage[]>";

    "The conversations of a branch, of a task, or of the whole store, oldest first."
    list_conversations, list_conversations_async =
        ListConversations(; options?: "ListConversationsOptions")
        -> "Conversation[]", "Promise<Conversation[]>";

    "Copies a conversation's tool-call sequences (each call with its results) into a new"
    "conversation on `targetBranch`."
    cherry_pick_tools, cherry_pick_tools_async =
        CherryPickTools(conversation_id: "string", target_branch: "string")
        -> "Conversation", "Promise<Conversation>";

    "Writes facts on `branch` (status `active`): texts, or `{ text, confidence?, source? }`."
    "Checked whole first, every problem at once (`[1].confidence`, relative to `facts`);"
    "nothing is written when there is one."
    add_facts, add_facts_async = AddFacts(branch: "string", facts: "FactInput[]")
        -> "Fact[]", "Promise<Fact[]>";

    "The facts of `branch`, oldest first; with `status`, only those in it."
    facts, facts_async = Facts(branch: "string"; options?: "FactsOptions")
        -> "Fact[]", "Promise<Fact[]>";

    "Every branch that holds a conversation or a fact, with its parent, in name order."
    branches, branches_async = Branches() -> "BranchInfo[]", "Promise<BranchInfo[]>";

    "Moves a branch's verified knowledge into its parent (or `into`): verified facts are copied"
    "(their sources become `promoted`), verified or cherry-picked conversations are copied"
    "with their messages; unverified and invalidated items stay. Merging twice adds nothing."
    merge, merge_async = Merge(branch: "string"; options?: "MergeOptions")
        -> "MergeReport", "Promise<MergeReport>";

    "The curation log of a task (every change on its branches: conversations added, messages"
    "appended, cherry-picks, facts, verifications, merges), or of `main` without `taskId`, in"
    "order."
    curation_events, curation_events_async = CurationEvents(; options?: "CurationEventsOptions")
        -> "CurationEvent[]", "Promise<CurationEvent[]>";

    "Packages a task's knowledge (`taskId`: `task/<taskId>` and its agents' branches) or a"
    "branch's (`branch`) as a bundle: its verified facts and key conversations (verified or"
    "cherry-picked; with `verifiedOnly: false`, everything not invalidated) with their"
    "messages, the task's summary and the scores, redacted unless `redact: false`, with a share"
    "token (`kb_` and 256 random bits) that finds it unless it is `private` (the default). The"
    "`Bundle` keeps the core's snake_case keys; its `toJson()` gives the portable JSON that"
    "`importBundle` reads, here or in another store."
    create_bundle, create_bundle_async = CreateBundle(name: "string"; options: "CreateBundleOptions")
        -> "Bundle", "Promise<Bundle>";

    "The bundle with this id; `NOT_FOUND` if there is none."
    get_bundle, get_bundle_async = GetBundle(id: "string") -> "Bundle", "Promise<Bundle>";

    "The store's bundles, oldest first; with `visibility`, only those of it."
    list_bundles, list_bundles_async = ListBundles(; options?: "ListBundlesOptions")
        -> "Bundle[]", "Promise<Bundle[]>";

    "The bundle a share token opens. A private bundle is never found by its token: a wrong"
    "token, a private bundle's and a deleted bundle's all give the same `NOT_FOUND`."
    bundle_by_token, bundle_by_token_async = BundleByToken(token: "string")
        -> "Bundle", "Promise<Bundle>";

    "Changes who may find a bundle by its token: `private` (nobody), `team` or `public`."
    set_visibility, set_visibility_async = SetVisibility(id: "string", visibility: "Visibility")
        -> "Bundle", "Promise<Bundle>";

    "Signs a bundle with a secret key (`secretKey`, `ed25519-secret:...` from"
    "`generateBundleKey()`): a store that trusts its public key (`trustBundleKeys`) imports the"
    "bundle's verdicts as verified. The signature travels in the portable form (`data.signature`,"
    "`toJson()`); a key that is no secret key is `VALIDATION` naming `secretKey`."
    sign_bundle, sign_bundle_async = SignBundle(id: "string"; options: "SignBundleOptions")
        -> "Bundle", "Promise<Bundle>";

    "Trusts public keys (`trust`, each `ed25519:...`) to vouch for bundles, or stops trusting"
    "them (`distrust`): a bundle signed by a trusted key is imported with its verdicts; any other"
    "bundle's verdicts stay its claim (its facts `active`, `verified_by: bundle:sha256:...`)."
    "Every bad key is named (`trust[0]`) and nothing changes then. Returns the keys trusted"
    "afterwards (none given: only lists them)."
    trust_bundle_keys, trust_bundle_keys_async = TrustBundleKeys(; options?: "TrustBundleKeysOptions")
        -> "TrustedKey[]", "Promise<TrustedKey[]>";

    "Deletes a bundle and its share token; what was imported from it stays."
    delete_bundle, delete_bundle_async = DeleteBundle(id: "string") -> "void", "Promise<void>";

    "A task's whole run as one timeline, oldest first (`at`, `type`, `agent`, `summary`,"
    "`data`): its handoffs' events (`handoff.created`, `handoff.claimed`, ...), its plan's log"
    "(`task.step_started`, ...) and its curation log (`curation.facts_added`, ...); each agent's"
    "contribution; its key facts and conversations (only verified ones with `verifiedOnly`);"
    "how it ended. `NOT_FOUND` when the task left nothing."
    replay, replay_async = Replay(task_id: "string"; options?: "ReplayOptions")
        -> "TaskReplay", "Promise<TaskReplay>";

    "Two runs side by side (an original and its rerun): the agents, decision points and key"
    "facts only in one or in both, the outcomes and the timelines' lengths."
    compare, compare_async = Compare(task_a: "string", task_b: "string")
        -> "TaskComparison", "Promise<TaskComparison>";
}
