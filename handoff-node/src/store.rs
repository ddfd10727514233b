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
    Chain, ChainPolicy, Clock, PathStats, Claim, DEFAULT_LEASE, Event, Handoff, Limits, ListFilter, NewHandoff,
    SqliteOptions, Store as CoreStore, Synchronous,
};
use napi::bindgen_prelude::{AsyncTask, JavaScriptClassExt, JsObjectValue};
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::convert::{self, MAX_SAFE_INTEGER};
use crate::errors::{Failure, Naming, Outcome, invalid};
use crate::record::{self, JsHandoff};
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

/// A live claim: the handoff as claimed and the fencing token that proves ownership.
#[napi(object, js_name = "Claim", object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsClaim {
    /// The handoff, as it was when claimed.
    pub handoff: JsHandoff,
    /// The fencing token: `heartbeat`, `release` and `complete` must present it. It grows by
    /// one with every claim of the handoff, so it stays far below 2^53.
    pub token: f64,
    /// The lease length in seconds; `heartbeat` extends the lease by this much.
    pub lease_seconds: f64,
}

impl Mirror for Claim {
    type Out = JsClaim;
    fn mirror(self) -> JsClaim {
        JsClaim {
            token: self.token as f64,
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
    /// Who may hand off to whom; leave it out to allow every pair.
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
    /// Nesting depth of metadata (default 64).
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
    /// SQLite only: how long a write waits for other processes' locks (default 60).
    pub lock_patience_seconds: Option<f64>,
    /// Chain limits.
    pub policy: Option<PolicyOptions>,
    /// Size limits.
    pub limits: Option<LimitsOptions>,
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

/// `store.events` options.
#[napi(object, object_to_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsOptions {
    /// Only this handoff's events; leave it out for the whole store's log.
    pub id: Option<String>,
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

/// Applies the clock, policy and limits of `options` to a freshly opened store.
fn configure(store: CoreStore, clock: Option<Arc<dyn Clock>>, options: &OpenOptions) -> CoreStore {
    let mut store = store;
    if let Some(clock) = clock {
        store = store.with_clock(clock);
    }
    if let Some(p) = &options.policy {
        let default = ChainPolicy::default();
        store = store.with_policy(ChainPolicy {
            max_handoffs: count(p.max_handoffs, default.max_handoffs),
            max_revisits: count(p.max_revisits, default.max_revisits),
            collaborators: p.collaborators.as_ref().map(|c| {
                c.iter()
                    .map(|(from, to)| (from.clone(), to.iter().cloned().collect::<BTreeSet<_>>()))
                    .collect()
            }),
        });
    }
    if let Some(l) = &options.limits {
        let default = Limits::default();
        store = store.with_limits(Limits {
            max_record_bytes: count(l.max_record_bytes, default.max_record_bytes),
            max_field_bytes: count(l.max_field_bytes, default.max_field_bytes),
            max_list_items: count(l.max_list_items, default.max_list_items),
            max_depth: count(l.max_depth, default.max_depth),
        });
    }
    store
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
        sqlite.lock_patience = Duration::try_from_secs_f64(seconds)
            .map_err(|_| invalid("lockPatienceSeconds", "must be a non-negative number of seconds"))?;
    }
    Ok(move || Ok(configure(CoreStore::open_with(&path, &sqlite)?, clock, &options)))
}

/// Opens (or creates) the SQLite store at `path` (`":memory:"` for a private in-memory
/// database). The file is shared safely by threads, worker threads and processes.
#[napi(catch_unwind, ts_args_type = "path: string, options?: OpenOptions", ts_return_type = "Store")]
pub fn open(env: Env, path: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Store> {
    let inner = guarded(&env, Naming::Js, || Ok(prepare_open(&env, &path, &options)?()?))?;
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

/// Reads a claim object (`{ handoff: { id }, token, leaseSeconds }`); only those keys are used.
fn read_claim(value: &Unknown<'_>) -> Outcome<Claim> {
    let obj = convert::object(value, "claim")?;
    let handoff: Unknown<'_> = obj.get_named_property("handoff")?;
    let handoff = convert::object(&handoff, "claim.handoff")?;
    let id = convert::string(&handoff.get_named_property("id")?, "claim.handoff.id")?;
    let token = convert::number(&obj.get_named_property("token")?, "claim.token")?;
    if token.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER).contains(&token) {
        return Err(invalid("claim.token", "must be a whole number from 0 to 2^53 - 1"));
    }
    let seconds: Unknown<'_> = obj.get_named_property("leaseSeconds")?;
    let lease = match seconds.get_type()? {
        ValueType::Undefined => DEFAULT_LEASE,
        _ => self::lease(Some(convert::number(&seconds, "claim.leaseSeconds")?))?,
    };
    // The core reads only the id of the claim's record; the rest stays empty.
    let handoff: Handoff = NewHandoff::default().into_record(id, chrono::DateTime::UNIX_EPOCH);
    Ok(Claim {
        handoff,
        token: token as u64,
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
fn now<T: Mirror>(env: &Env, naming: Naming, prepared: impl FnOnce() -> Work<T>) -> napi::Result<Unknown<'static>> {
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
        ts_args_type = "options?: Omit<OpenOptions, 'synchronous' | 'lockPatienceSeconds'>",
        ts_return_type = "Store"
    )]
    pub fn memory(env: Env, options: Unknown<'_>) -> napi::Result<Store> {
        let inner = guarded(&env, Naming::Js, || {
            let clock = clock::from_options(&env, &options)?;
            let options: OpenOptions = convert::options(&options, "options")?;
            if options.synchronous.is_some() || options.lock_patience_seconds.is_some() {
                return Err(invalid("options", "synchronous and lockPatienceSeconds apply to SQLite only"));
            }
            Ok(configure(CoreStore::memory(), clock, &options))
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
    #[napi(catch_unwind, ts_args_type = "options: CreateOptions", ts_return_type = "Handoff")]
    pub fn create(&self, env: Env, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Create, || self.prepare_create(&options))
    }

    /// `create`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "options: CreateOptions", ts_return_type = "Promise<Handoff>")]
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
    #[napi(catch_unwind, ts_args_type = "items: CreateOptions[]", ts_return_type = "Handoff[]")]
    pub fn create_many(&self, env: Env, items: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Create, || self.prepare_create_many(&items))
    }

    /// `createMany`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "items: CreateOptions[]", ts_return_type = "Promise<Handoff[]>")]
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
    #[napi(catch_unwind, ts_args_type = "id: string", ts_return_type = "Promise<Handoff>")]
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
        };
        let store = self.core();
        work(move || store.list(&filter))
    }

    /// Handoffs matching the filter, oldest first.
    #[napi(catch_unwind, ts_args_type = "options?: ListOptions", ts_return_type = "Handoff[]")]
    pub fn list(&self, env: Env, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_list(&options))
    }

    /// `list`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "options?: ListOptions", ts_return_type = "Promise<Handoff[]>")]
    pub fn list_async(&self, options: Unknown<'_>) -> AsyncTask<Job<Vec<Handoff>>> {
        Job::start(Naming::Js, self.prepare_list(&options))
    }

    fn prepare_claim(&self, id: &Unknown<'_>, agent: &Unknown<'_>, options: &Unknown<'_>) -> Work<Claim> {
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
    pub fn claim(&self, env: Env, id: Unknown<'_>, agent: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_claim(&id, &agent, &options))
    }

    /// `claim`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, agent: string, options?: ClaimOptions",
        ts_return_type = "Promise<Claim>"
    )]
    pub fn claim_async(&self, id: Unknown<'_>, agent: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<Claim>> {
        Job::start(Naming::Js, self.prepare_claim(&id, &agent, &options))
    }

    fn prepare_claim_next(&self, agent: &Unknown<'_>, options: &Unknown<'_>) -> Work<Option<Claim>> {
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
    pub fn claim_next(&self, env: Env, agent: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_claim_next(&agent, &options))
    }

    /// `claimNext`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "agent: string, options?: ClaimNextOptions",
        ts_return_type = "Promise<Claim | null>"
    )]
    pub fn claim_next_async(&self, agent: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<Option<Claim>>> {
        Job::start(Naming::Js, self.prepare_claim_next(&agent, &options))
    }

    fn prepare_heartbeat(&self, claim: &Unknown<'_>) -> Work<Handoff> {
        let claim = read_claim(claim)?;
        let store = self.core();
        work(move || store.heartbeat(&claim))
    }

    /// Extends the claim's lease by its `leaseSeconds`, counted from now. `LEASE_LOST` when
    /// the token is no longer current.
    #[napi(catch_unwind, ts_args_type = "claim: Claim", ts_return_type = "Handoff")]
    pub fn heartbeat(&self, env: Env, claim: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_heartbeat(&claim))
    }

    /// `heartbeat`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "claim: Claim", ts_return_type = "Promise<Handoff>")]
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
    #[napi(catch_unwind, ts_args_type = "claim: Claim, options: ReasonOptions", ts_return_type = "Handoff")]
    pub fn release(&self, env: Env, claim: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_release(&claim, &options))
    }

    /// `release`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim, options: ReasonOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn release_async(&self, claim: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
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
    #[napi(catch_unwind, ts_args_type = "claim: Claim, options?: CompleteOptions", ts_return_type = "Handoff")]
    pub fn complete(&self, env: Env, claim: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_complete(&claim, &options))
    }

    /// `complete`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "claim: Claim, options?: CompleteOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn complete_async(&self, claim: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_complete(&claim, &options))
    }

    fn prepare_reject(&self, id: &Unknown<'_>, agent: &Unknown<'_>, options: &Unknown<'_>) -> Work<Handoff> {
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
    pub fn reject(&self, env: Env, id: Unknown<'_>, agent: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_reject(&id, &agent, &options))
    }

    /// `reject`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, agent: string, options: ReasonOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn reject_async(&self, id: Unknown<'_>, agent: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_reject(&id, &agent, &options))
    }

    fn prepare_cancel(&self, id: &Unknown<'_>, by: &Unknown<'_>, options: &Unknown<'_>) -> Work<Handoff> {
        let id = convert::string(id, "id")?;
        let by = convert::string(by, "by")?;
        let o: CancelOptions = convert::options(options, "options")?;
        let store = self.core();
        work(move || store.cancel(&id, &by, o.reason.as_deref()))
    }

    /// Withdraws a pending or claimed handoff.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, by: string, options?: CancelOptions",
        ts_return_type = "Handoff"
    )]
    pub fn cancel(&self, env: Env, id: Unknown<'_>, by: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_cancel(&id, &by, &options))
    }

    /// `cancel`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "id: string, by: string, options?: CancelOptions",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn cancel_async(&self, id: Unknown<'_>, by: Unknown<'_>, options: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Js, self.prepare_cancel(&id, &by, &options))
    }

    fn prepare_events(&self, options: &Unknown<'_>) -> Work<Vec<Event>> {
        let o: EventsOptions = convert::options(options, "options")?;
        let store = self.core();
        work(move || store.events(o.id.as_deref()))
    }

    /// The event log of one handoff, or of the whole store, oldest first.
    #[napi(catch_unwind, ts_args_type = "options?: EventsOptions", ts_return_type = "Event[]")]
    pub fn events(&self, env: Env, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_events(&options))
    }

    /// `events`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "options?: EventsOptions", ts_return_type = "Promise<Event[]>")]
    pub fn events_async(&self, options: Unknown<'_>) -> AsyncTask<Job<Vec<Event>>> {
        Job::start(Naming::Js, self.prepare_events(&options))
    }

    fn prepare_chain(&self, task_id: &Unknown<'_>) -> Work<Chain> {
        let task_id = convert::string(task_id, "taskId")?;
        let store = self.core();
        work(move || store.chain(&task_id))
    }

    /// The task's chain of hops, oldest first.
    #[napi(catch_unwind, ts_args_type = "taskId: string", ts_return_type = "Chain")]
    pub fn chain(&self, env: Env, task_id: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_chain(&task_id))
    }

    /// `chain`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "taskId: string", ts_return_type = "Promise<Chain>")]
    pub fn chain_async(&self, task_id: Unknown<'_>) -> AsyncTask<Job<Chain>> {
        Job::start(Naming::Js, self.prepare_chain(&task_id))
    }

    fn prepare_checkpoint(&self, task_id: &Unknown<'_>, agent: &Unknown<'_>, fields: &Unknown<'_>) -> Work<Handoff> {
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
    pub fn checkpoint(&self, env: Env, task_id: Unknown<'_>, agent: Unknown<'_>, fields: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Create, || self.prepare_checkpoint(&task_id, &agent, &fields))
    }

    /// `checkpoint`, off the JavaScript thread.
    #[napi(
        catch_unwind,
        ts_args_type = "taskId: string, agent: string, fields: CheckpointFields",
        ts_return_type = "Promise<Handoff>"
    )]
    pub fn checkpoint_async(&self, task_id: Unknown<'_>, agent: Unknown<'_>, fields: Unknown<'_>) -> AsyncTask<Job<Handoff>> {
        Job::start(Naming::Create, self.prepare_checkpoint(&task_id, &agent, &fields))
    }

    fn prepare_stalled(&self, older_than_seconds: &Unknown<'_>) -> Work<Vec<String>> {
        let seconds = convert::number(older_than_seconds, "olderThanSeconds")?;
        let older_than = Duration::try_from_secs_f64(seconds)
            .map_err(|_| invalid("olderThanSeconds", "must be a non-negative number of seconds"))?;
        let store = self.core();
        work(move || store.stalled(older_than))
    }

    /// Task ids in progress whose last sign of life (claim, heartbeat, checkpoint) is older
    /// than `olderThanSeconds`.
    #[napi(catch_unwind, ts_args_type = "olderThanSeconds: number", ts_return_type = "string[]")]
    pub fn stalled(&self, env: Env, older_than_seconds: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        now(&env, Naming::Js, || self.prepare_stalled(&older_than_seconds))
    }

    /// `stalled`, off the JavaScript thread.
    #[napi(catch_unwind, ts_args_type = "olderThanSeconds: number", ts_return_type = "Promise<string[]>")]
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
