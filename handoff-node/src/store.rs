//! The `Store` class: every call of the core's `Store`, each also as a Promise (`*Async`) that
//! runs on libuv's thread pool, so the event loop never waits for SQLite.
//!
//! Each call is written once, as a `prepare_*` method that reads the JavaScript arguments on the
//! JavaScript thread and returns the work to do; the sync method runs that work at once, the
//! `*Async` method hands it to a [`Job`].

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use handoff_core::{
    Chain, ChainPolicy, Claim, ClaimRef, ClaimSecret, Clock, DEFAULT_LEASE, Event, EventFilter,
    Handoff, Limits, ListFilter, PathStats, SqliteOptions, Store as CoreStore, Synchronous,
};
use napi::bindgen_prelude::{AsyncTask, JavaScriptClassExt, JsObjectValue};
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::convert::{self, MAX_SAFE_INTEGER};
use crate::errors::{Failure, Naming, Outcome, camel_case, invalid};
use crate::record::{self, JsHandoff};
use crate::task::{Done, Job, Mirror, ToJs, guarded, sync};

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
/// [`ClaimReference`]).
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

/// What `heartbeat`, `release`, `complete` and `cancelClaim` need of a claim: a `Claim`
/// itself, or these four values of one.
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ClaimReference {
    /// The claimed handoff's id.
    pub handoff_id: String,
    /// The claim's fencing token.
    pub token: f64,
    /// The claim's secret, as the claim returned it.
    pub secret: String,
    /// The lease length in seconds (default 300); `heartbeat` extends the lease by this much.
    pub lease_seconds: Option<f64>,
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

/// `store.list` filter.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListOptions {
    /// Only records in this status.
    #[napi(ts_type = "HandoffStatus")]
    pub status: Option<String>,
    /// Only records of this task.
    pub task_id: Option<String>,
    /// Only records addressed to this agent.
    pub to_agent: Option<String>,
    /// Only records of this kind.
    #[napi(ts_type = "HandoffKind")]
    pub kind: Option<String>,
    /// At most this many records.
    pub limit: Option<u32>,
}

/// `store.claim` options.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimOptions {
    /// How long the claim lasts without a heartbeat, in seconds (default 300).
    pub lease_seconds: Option<f64>,
}

/// `store.claimNext` options.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimNextOptions {
    /// Only claim within this task.
    pub task_id: Option<String>,
    /// How long the claim lasts without a heartbeat, in seconds (default 300).
    pub lease_seconds: Option<f64>,
}

/// `store.release` and `store.reject` options.
#[napi(object, object_to_js = false)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReasonOptions {
    /// Why.
    pub reason: String,
}

/// `store.complete` options.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteOptions {
    /// The result (default empty).
    pub outcome: Option<String>,
}

/// `store.cancel` options.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelOptions {
    /// Why, if you want it logged.
    pub reason: Option<String>,
}

/// `store.events` options: which events, and which page of them.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsOptions {
    /// Only this handoff's events.
    pub handoff_id: Option<String>,
    /// The same as `handoffId` (its older name); give one or the other.
    pub id: Option<String>,
    /// Only the events of this task's handoffs.
    pub task_id: Option<String>,
    /// Only events after this cursor: the `seq` of the last event already read.
    pub after: Option<f64>,
    /// At most this many events (a page); leave it out for all of them.
    pub limit: Option<u32>,
}

fn lease(seconds: Option<f64>) -> Outcome<Duration> {
    match seconds {
        None => Ok(DEFAULT_LEASE),
        Some(s) => Duration::try_from_secs_f64(s)
            .map_err(|_| invalid("leaseSeconds", "must be a positive number of seconds")),
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
    fn read(clock: Option<Arc<dyn Clock>>, options: &OpenOptions) -> Outcome<Settings> {
        let policy = options.policy.as_ref().map(|p| {
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
        let limits = match &options.limits {
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
    let mut sqlite = SqliteOptions::default();
    if let Some(sync) = &options.synchronous {
        sqlite.synchronous = sync.parse::<Synchronous>()?;
    }
    if let Some(seconds) = options.lock_patience_seconds {
        sqlite.lock_patience = Duration::try_from_secs_f64(seconds).map_err(|_| {
            invalid(
                "lockPatienceSeconds",
                "must be a non-negative number of seconds",
            )
        })?;
    }
    let read_only = options.read_only.unwrap_or(false);
    let settings = Settings::read(clock, &options)?;
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

/// Reads a claim (`Claim` or `{ handoffId, token, secret, leaseSeconds }`): only those four
/// keys, never the record, so that nothing a caller can read (`get`, `list`, events) settles a
/// claim. A `Claim` serialised by an older version, without `handoffId`, is read by its
/// `handoff.id`.
fn read_claim(value: &Unknown<'_>) -> Outcome<ClaimRef> {
    let obj = convert::object(value, "claim")?;
    let id: Unknown<'_> = obj.get_named_property("handoffId")?;
    let handoff_id = if id.get_type()? == ValueType::Undefined {
        let handoff: Unknown<'_> = obj.get_named_property("handoff")?;
        if handoff.get_type()? == ValueType::Undefined {
            return Err(invalid(
                "handoffId",
                "is required (the claimed handoff's id)",
            ));
        }
        let handoff = convert::object(&handoff, "handoff")?;
        convert::string(&handoff.get_named_property("id")?, "handoff.id")?
    } else {
        convert::string(&id, "handoffId")?
    };
    let token = convert::number(&obj.get_named_property("token")?, "token")?;
    if token.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER).contains(&token) {
        return Err(invalid(
            "token",
            "must be a whole number from 0 to 2^53 - 1",
        ));
    }
    let secret: Unknown<'_> = obj.get_named_property("secret")?;
    let secret = match secret.get_type()? {
        ValueType::Undefined => {
            return Err(invalid(
                "secret",
                "is required: the secret the claim returned",
            ));
        }
        _ => ClaimSecret::parse(&convert::string(&secret, "secret")?)?,
    };
    let seconds: Unknown<'_> = obj.get_named_property("leaseSeconds")?;
    let lease = match seconds.get_type()? {
        ValueType::Undefined => DEFAULT_LEASE,
        _ => self::lease(Some(convert::number(&seconds, "leaseSeconds")?))?,
    };
    Ok(ClaimRef {
        handoff_id,
        token: token as u64,
        secret,
        lease,
    })
}

type Work<T> = Outcome<Box<dyn FnOnce() -> handoff_core::Result<T> + Send>>;

fn work<T, F>(f: F) -> Work<T>
where
    F: FnOnce() -> handoff_core::Result<T> + Send + 'static,
{
    Ok(Box::new(f))
}

/// Runs prepared work on the JavaScript thread.
fn now<T: Mirror>(
    env: &Env,
    naming: Naming,
    prepared: impl FnOnce() -> Work<T>,
) -> napi::Result<Unknown<'static>> {
    sync(env, naming, || Ok(prepared()?()?))
}

#[napi]
impl Store {
    fn core(&self) -> CoreStore {
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
            Ok(Settings::read(clock, &options)?.apply(CoreStore::memory()))
        })?;
        Ok(Store {
            inner: AssertUnwindSafe(inner),
        })
    }

    fn prepare_create(&self, options: &Unknown<'_>) -> Work<Handoff> {
        let new = record::new_handoff(options)?;
        let store = self.core();
        work(move || store.create(new))
    }

    /// Creates a pending handoff. With a caller-supplied `id`, creating again with the same
    /// content returns the stored record; with other content it fails with `CONFLICT`.
    #[napi(
        catch_unwind,
        ts_args_type = "options: CreateOptions",
        ts_return_type = "Handoff"
    )]
    pub fn create(&self, env: Env, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Create, || self.prepare_create(&options))
    }

    /// `create`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "options: CreateOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn create_async(&self, options: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Create, self.prepare_create(&options))
    }

    fn prepare_create_many(&self, items: &Unknown<'_>) -> Work<Vec<Handoff>> {
        if !(items.get_type()? == ValueType::Object && items.is_array()?) {
            return Err(invalid("items", "must be an array of create options"));
        }
        let array = items.coerce_to_object()?;
        let len = array.get_array_length()?;
        let mut news = Vec::with_capacity(len as usize);
        for i in 0..len {
            let item: Unknown<'_> = array.get_element(i)?;
            news.push(record::new_handoff(&item).map_err(|failure| at_index(failure, i))?);
        }
        let store = self.core();
        work(move || store.create_many(news))
    }

    /// Creates several handoffs in one transaction: all of them, or none when one is refused.
    #[napi(
        catch_unwind,
        ts_args_type = "items: CreateOptions[]",
        ts_return_type = "Handoff[]"
    )]
    pub fn create_many(&self, env: Env, items: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Create, || self.prepare_create_many(&items))
    }

    /// `createMany`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "items: CreateOptions[]",
        ts_return_type = "Promise<Handoff[]>"
    )]
    pub fn create_many_async(&self, items: Unknown<'_>) -> AsyncTask<Job<Vec<Handoff>>> {
        Job::start(Naming::Create, self.prepare_create_many(&items))
    }

    fn prepare_get(&self, id: &Unknown<'_>) -> Work<Handoff> {
        let id = convert::string(id, "id")?;
        let store = self.core();
        work(move || store.get(&id))
    }

    /// The handoff with this id; `NOT_FOUND` if there is none.
    #[napi(catch_unwind, ts_args_type = "id: string", ts_return_type = "Handoff")]
    pub fn get(&self, env: Env, id: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_get(&id))
    }

    /// `get`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn get_async(&self, id: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_get(&id))
    }

    fn prepare_list(&self, options: &Unknown<'_>) -> Work<Vec<Handoff>> {
        let o: ListOptions = convert::options(options, "options")?;
        let filter = ListFilter {
            status: o.status.as_deref().map(str::parse).transpose()?,
            task_id: o.task_id,
            to_agent: o.to_agent,
            kind: o.kind.as_deref().map(str::parse).transpose()?,
            limit: o.limit.map(|l| l as usize),
            after: None,
        };
        let store = self.core();
        work(move || store.list(&filter))
    }

    /// Handoffs matching the filter, oldest first.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: ListOptions",
        ts_return_type = "Handoff[]"
    )]
    pub fn list(&self, env: Env, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_list(&options))
    }

    /// `list`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: ListOptions",
        ts_return_type = "Promise<Handoff[]>"
    )]
    pub fn list_async(&self, options: Unknown<'_>) -> AsyncTask<Job<Vec<Handoff>>> {
        Job::start(Naming::Js, self.prepare_list(&options))
    }

    fn prepare_claim(
        &self,
        id: &Unknown<'_>,
        agent: &Unknown<'_>,
        options: &Unknown<'_>,
    ) -> Work<Claim> {
        let id = convert::string(id, "id")?;
        let agent = convert::string(agent, "agent")?;
        let o: ClaimOptions = convert::options(options, "options")?;
        let lease = lease(o.lease_seconds)?;
        let store = self.core();
        work(move || store.claim(&id, &agent, lease))
    }

    /// Claims the handoff `id` for `agent`. `ALREADY_CLAIMED` while another claim is live;
    /// `INVALID_TRANSITION` when it is finished or addressed to another agent.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, agent: string, options?: ClaimOptions",
        ts_return_type = "Claim"
    )]
    pub fn claim(
        &self,
        env: Env,
        id: Unknown<'_>,
        agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || {
            self.prepare_claim(&id, &agent, &options)
        })
    }

    /// `claim`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, agent: string, options?: ClaimOptions",
        ts_return_type = "Promise<Claim>"
    )]
    pub fn claim_async(
        &self,
        id: Unknown<'_>,
        agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Claim>> {
        Job::start(Naming::Js, self.prepare_claim(&id, &agent, &options))
    }

    fn prepare_claim_next(
        &self,
        agent: &Unknown<'_>,
        options: &Unknown<'_>,
    ) -> Work<Option<Claim>> {
        let agent = convert::string(agent, "agent")?;
        let o: ClaimNextOptions = convert::options(options, "options")?;
        let lease = lease(o.lease_seconds)?;
        let store = self.core();
        work(move || store.claim_next(&agent, o.task_id.as_deref(), lease))
    }

    /// Claims the oldest pending handoff `agent` may take (addressed to it or to anyone);
    /// `null` when there is none.
    #[napi(
        catch_unwind,
        ts_args_type = "agent: string, options?: ClaimNextOptions",
        ts_return_type = "Claim | null"
    )]
    pub fn claim_next(
        &self,
        env: Env,
        agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || {
            self.prepare_claim_next(&agent, &options)
        })
    }

    /// `claimNext`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "agent: string, options?: ClaimNextOptions",
        ts_return_type = "Promise<Claim | null>"
    )]
    pub fn claim_next_async(
        &self,
        agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Option<Claim>>> {
        Job::start(Naming::Js, self.prepare_claim_next(&agent, &options))
    }

    fn prepare_heartbeat(&self, claim: &Unknown<'_>) -> Work<Handoff> {
        let claim = read_claim(claim)?;
        let store = self.core();
        work(move || store.heartbeat(&claim))
    }

    /// Extends the claim's lease by its `leaseSeconds`, counted from now. `LEASE_LOST` when
    /// the token is no longer current.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference",
        ts_return_type = "Handoff"
    )]
    pub fn heartbeat(&self, env: Env, claim: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_heartbeat(&claim))
    }

    /// `heartbeat`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn heartbeat_async(&self, claim: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_heartbeat(&claim))
    }

    fn prepare_release(&self, claim: &Unknown<'_>, options: &Unknown<'_>) -> Work<Handoff> {
        let claim = read_claim(claim)?;
        let o: ReasonOptions = convert::options(options, "options")?;
        let store = self.core();
        work(move || store.release(&claim, &o.reason))
    }

    /// Gives the handoff back: pending again, one more attempt counted. `LEASE_LOST` when the
    /// token is no longer current.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference, options: ReasonOptions",
        ts_return_type = "Handoff"
    )]
    pub fn release(
        &self,
        env: Env,
        claim: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_release(&claim, &options))
    }

    /// `release`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference, options: ReasonOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn release_async(
        &self,
        claim: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_release(&claim, &options))
    }

    fn prepare_complete(&self, claim: &Unknown<'_>, options: &Unknown<'_>) -> Work<Handoff> {
        let claim = read_claim(claim)?;
        let o: CompleteOptions = convert::options(options, "options")?;
        let outcome = o.outcome.unwrap_or_default();
        let store = self.core();
        work(move || store.complete(&claim, &outcome))
    }

    /// Finishes the handoff. `LEASE_LOST` when the token is no longer current.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference, options?: CompleteOptions",
        ts_return_type = "Handoff"
    )]
    pub fn complete(
        &self,
        env: Env,
        claim: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_complete(&claim, &options))
    }

    /// `complete`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference, options?: CompleteOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn complete_async(
        &self,
        claim: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_complete(&claim, &options))
    }

    fn prepare_reject(
        &self,
        id: &Unknown<'_>,
        agent: &Unknown<'_>,
        options: &Unknown<'_>,
    ) -> Work<Handoff> {
        let id = convert::string(id, "id")?;
        let agent = convert::string(agent, "agent")?;
        let o: ReasonOptions = convert::options(options, "options")?;
        let store = self.core();
        work(move || store.reject(&id, &agent, &o.reason))
    }

    /// Refuses the handoff as `agent`, its addressee (or, for an open handoff, its holder).
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, agent: string, options: ReasonOptions",
        ts_return_type = "Handoff"
    )]
    pub fn reject(
        &self,
        env: Env,
        id: Unknown<'_>,
        agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || {
            self.prepare_reject(&id, &agent, &options)
        })
    }

    /// `reject`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, agent: string, options: ReasonOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn reject_async(
        &self,
        id: Unknown<'_>,
        agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_reject(&id, &agent, &options))
    }

    fn prepare_cancel(
        &self,
        id: &Unknown<'_>,
        by: &Unknown<'_>,
        options: &Unknown<'_>,
    ) -> Work<Handoff> {
        let id = convert::string(id, "id")?;
        let by = convert::string(by, "by")?;
        let o: CancelOptions = convert::options(options, "options")?;
        let store = self.core();
        work(move || store.cancel(&id, &by, o.reason.as_deref()))
    }

    /// Withdraws a pending or claimed handoff, as `by`: its creator (`fromAgent`), or anyone
    /// when it has none; anyone else gets `INVALID_TRANSITION`. Its holder cancels with
    /// `cancelClaim(claim)`.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, by: string, options?: CancelOptions",
        ts_return_type = "Handoff"
    )]
    pub fn cancel(
        &self,
        env: Env,
        id: Unknown<'_>,
        by: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_cancel(&id, &by, &options))
    }

    /// `cancel`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, by: string, options?: CancelOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn cancel_async(
        &self,
        id: Unknown<'_>,
        by: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_cancel(&id, &by, &options))
    }

    fn prepare_cancel_claim(&self, claim: &Unknown<'_>, options: &Unknown<'_>) -> Work<Handoff> {
        let claim = read_claim(claim)?;
        let o: CancelOptions = convert::options(options, "options")?;
        let store = self.core();
        work(move || store.cancel_claim(&claim, o.reason.as_deref()))
    }

    /// Withdraws the handoff as its holder, with its claim (the claim or its reference).
    /// `LEASE_LOST` when the token is no longer current or the secret does not match.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference, options?: CancelOptions",
        ts_return_type = "Handoff"
    )]
    pub fn cancel_claim(
        &self,
        env: Env,
        claim: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || {
            self.prepare_cancel_claim(&claim, &options)
        })
    }

    /// `cancelClaim`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim | ClaimReference, options?: CancelOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn cancel_claim_async(
        &self,
        claim: Unknown<'_>,
        options: Unknown<'_>,
    ) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_cancel_claim(&claim, &options))
    }

    fn prepare_events(&self, options: &Unknown<'_>) -> Work<Vec<Event>> {
        let o: EventsOptions = convert::options(options, "options")?;
        // The core names a bad handoff id `id`; name it as the caller did.
        let named = if o.handoff_id.is_some() {
            "handoffId"
        } else {
            "id"
        };
        let handoff_id = match (o.handoff_id, o.id) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "id",
                    "give handoffId or id (its older name), not both",
                ));
            }
            (one, other) => one.or(other),
        };
        let after = match o.after {
            None => None,
            Some(seq) if seq.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&seq) => {
                Some(seq as u64)
            }
            Some(_) => {
                return Err(invalid(
                    "after",
                    "must be an event's seq: a whole number from 0 to 2^53 - 1",
                ));
            }
        };
        let filter = EventFilter {
            handoff_id,
            task_id: o.task_id,
            after,
            limit: o.limit.map(|l| l as usize),
        };
        let store = self.core();
        work(move || {
            store.events_page(&filter).map_err(|err| match err {
                handoff_core::Error::Validation { mut problems } => {
                    for p in problems.iter_mut().filter(|p| p.field == "id") {
                        p.field = named.to_owned();
                    }
                    handoff_core::Error::Validation { problems }
                }
                other => other,
            })
        })
    }

    /// The event log, oldest first: of the whole store, one handoff (`handoffId`) or one task
    /// (`taskId`). Read a large log in pages: pass the last event's `seq` as `after` and a
    /// `limit`, until a page comes back empty.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: EventsOptions",
        ts_return_type = "Event[]"
    )]
    pub fn events(&self, env: Env, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_events(&options))
    }

    /// `events`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: EventsOptions",
        ts_return_type = "Promise<Event[]>"
    )]
    pub fn events_async(&self, options: Unknown<'_>) -> AsyncTask<Job<Vec<Event>>> {
        Job::start(Naming::Js, self.prepare_events(&options))
    }

    fn prepare_chain(&self, task_id: &Unknown<'_>) -> Work<Chain> {
        let task_id = convert::string(task_id, "taskId")?;
        let store = self.core();
        work(move || store.chain(&task_id))
    }

    /// The task's chain of hops, oldest first.
    #[napi(
        catch_unwind,
        ts_args_type = "taskId: string",
        ts_return_type = "Chain"
    )]
    pub fn chain(&self, env: Env, task_id: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_chain(&task_id))
    }

    /// `chain`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "taskId: string",
        ts_return_type = "Promise<Chain>"
    )]
    pub fn chain_async(&self, task_id: Unknown<'_>) -> AsyncTask<Job<Chain>> {
        Job::start(Naming::Js, self.prepare_chain(&task_id))
    }

    fn prepare_checkpoint(
        &self,
        task_id: &Unknown<'_>,
        agent: &Unknown<'_>,
        fields: &Unknown<'_>,
    ) -> Work<Handoff> {
        let task_id = convert::string(task_id, "taskId")?;
        let agent = convert::string(agent, "agent")?;
        let new = record::checkpoint_fields(&task_id, fields)?;
        let store = self.core();
        work(move || store.checkpoint(&task_id, &agent, new))
    }

    /// Saves `agent`'s progress on `taskId` without changing who owns what (a finished record
    /// of kind `checkpoint`, never claimable, not a hop).
    #[napi(
        catch_unwind,
        ts_args_type = "taskId: string, agent: string, fields: CheckpointFields",
        ts_return_type = "Handoff"
    )]
    pub fn checkpoint(
        &self,
        env: Env,
        task_id: Unknown<'_>,
        agent: Unknown<'_>,
        fields: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Create, || {
            self.prepare_checkpoint(&task_id, &agent, &fields)
        })
    }

    /// `checkpoint`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "taskId: string, agent: string, fields: CheckpointFields",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn checkpoint_async(
        &self,
        task_id: Unknown<'_>,
        agent: Unknown<'_>,
        fields: Unknown<'_>,
    ) -> AsyncTask<Job<Handoff>> {
        Job::start(
            Naming::Create,
            self.prepare_checkpoint(&task_id, &agent, &fields),
        )
    }

    fn prepare_stalled(&self, older_than_seconds: &Unknown<'_>) -> Work<Vec<String>> {
        let seconds = convert::number(older_than_seconds, "olderThanSeconds")?;
        let older_than = Duration::try_from_secs_f64(seconds).map_err(|_| {
            invalid(
                "olderThanSeconds",
                "must be a non-negative number of seconds",
            )
        })?;
        let store = self.core();
        work(move || store.stalled(older_than))
    }

    /// Task ids in progress whose last sign of life (claim, heartbeat, checkpoint) is older
    /// than `olderThanSeconds`.
    #[napi(
        catch_unwind,
        ts_args_type = "olderThanSeconds: number",
        ts_return_type = "string[]"
    )]
    pub fn stalled(
        &self,
        env: Env,
        older_than_seconds: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || {
            self.prepare_stalled(&older_than_seconds)
        })
    }

    /// `stalled`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "olderThanSeconds: number",
        ts_return_type = "Promise<string[]>"
    )]
    pub fn stalled_async(&self, older_than_seconds: Unknown<'_>) -> AsyncTask<Job<Vec<String>>> {
        Job::start(Naming::Js, self.prepare_stalled(&older_than_seconds))
    }

    fn prepare_stats(&self) -> Work<Vec<PathStats>> {
        let store = self.core();
        work(move || store.stats())
    }

    /// Per from→to pair: how many hand-offs, how many completed, failed or rejected, and the
    /// median seconds from creation to the first claim and to completion.
    #[napi(catch_unwind, ts_return_type = "PathStats[]")]
    pub fn stats(&self, env: Env) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_stats())
    }

    /// `stats`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<PathStats[]>")]
    pub fn stats_async(&self) -> AsyncTask<Job<Vec<PathStats>>> {
        Job::start(Naming::Js, self.prepare_stats())
    }

    fn prepare_save_policy(&self) -> Work<Done> {
        let store = self.core();
        work(move || store.save_policy().map(|()| Done))
    }

    /// Saves this store's chain policy and limits (those given to `open`, or the defaults) in
    /// the store itself, so that every process that opens it without its own — the CLI and the
    /// MCP server included — applies them.
    #[napi(catch_unwind)]
    pub fn save_policy(&self, env: Env) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            self.prepare_save_policy()?()?;
            Ok(())
        })
    }

    /// `savePolicy`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn save_policy_async(&self) -> AsyncTask<Job<Done>> {
        Job::start(Naming::Js, self.prepare_save_policy())
    }

    fn prepare_saved_policy(&self) -> Work<Option<(ChainPolicy, Limits)>> {
        let store = self.core();
        work(move || store.saved_policy())
    }

    /// The policy and limits saved with `savePolicy`, or `null` when none were saved.
    #[napi(catch_unwind, ts_return_type = "SavedPolicy | null")]
    pub fn saved_policy(&self, env: Env) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_saved_policy())
    }

    /// `savedPolicy`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<SavedPolicy | null>")]
    pub fn saved_policy_async(&self) -> AsyncTask<Job<Option<(ChainPolicy, Limits)>>> {
        Job::start(Naming::Js, self.prepare_saved_policy())
    }

    fn prepare_backup(&self, path: &Unknown<'_>) -> Work<Done> {
        let path = convert::string(path, "path")?;
        let store = self.core();
        work(move || store.backup(&path).map(|()| Done))
    }

    /// Writes a consistent copy of the store to `path` (a new file; it must not exist) while
    /// the store stays in use: an SQLite snapshot, readable by its owner only.
    #[napi(catch_unwind, ts_args_type = "path: string")]
    pub fn backup(&self, env: Env, path: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            self.prepare_backup(&path)?()?;
            Ok(())
        })
    }

    /// `backup`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "path: string",
        ts_return_type = "Promise<void>"
    )]
    pub fn backup_async(&self, path: Unknown<'_>) -> AsyncTask<Job<Done>> {
        Job::start(Naming::Js, self.prepare_backup(&path))
    }

    fn prepare_reap(&self) -> Work<usize> {
        let store = self.core();
        work(move || store.reap())
    }

    /// Applies every due time-driven change (lapsed leases, expired handoffs); returns how many
    /// handoffs changed. `claimNext` does this for a small batch itself.
    #[napi(catch_unwind, ts_return_type = "number")]
    pub fn reap(&self, env: Env) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_reap())
    }

    /// `reap`, off the JavaScript thread.
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn reap_async(&self) -> AsyncTask<Job<usize>> {
        Job::start(Naming::Js, self.prepare_reap())
    }
}

/// Names the item of `createMany` a problem belongs to: `[3].goal`.
fn at_index(failure: Failure, index: u32) -> Failure {
    match failure {
        Failure::Core(handoff_core::Error::Validation { mut problems }) => {
            for p in &mut problems {
                p.field = format!("[{index}].{}", p.field);
            }
            Failure::Core(handoff_core::Error::Validation { problems })
        }
        other => other,
    }
}
