//! The [`Store`] object and the records its methods take and return.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use handoff_core as core;
use handoff_core::ops::{self, Arguments};
use serde::Serialize;

use crate::arguments::{self, JsonText, JsonTexts, ObjectText, arguments};
use crate::bundles::{self, Bundle, BundleType, ImportReport, TrustedKey, Visibility};
use crate::claim::{Claim, ClaimRef};
use crate::clock::ManualClock;
use crate::context::{ContextMessage, ForeignSummarizer, Packet, Summarizer};
use crate::curation::{
    BranchInfo, Conversation, CurationEvent, DecisionJudge, Fact, FactExtractor, FactStatus,
    Finite, ForeignExtractor, ForeignJudge, ForeignVerifier, MergeReport, NewFact, StoredMessage,
    StrictVerifier, Verifier, VerifyReport,
};
use crate::error::{HandoffError, Result};
use crate::events::{Chain, Event, Metrics, PathStats, QueueCount};
use crate::lease::Lease;

use crate::memory::{self, Memory, MemoryUpdater, Session};
use crate::protocol::{
    BlockerType, Category, ContextUpdates, Decision, ErrorType, EscalationDetails, FileChange,
    InitContext, ProtocolRun, ProtocolStats, Severity, Tests, Urgency, WorkerStatus,
};
use crate::record::{CreateOptions, Handoff, HandoffKind, HandoffStatus};
use crate::replay::{TaskComparison, TaskReplay};
use crate::tasks::{
    HistoryEntry, StepSpec, Task, TaskEvent, TaskStatistics, TaskStatus, TaskSummary,
};
pub use handoff_core::{Capabilities, CheckReport, Damage};

/// How durable each write is, on SQLite and on a folder of JSON files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, uniffi::Enum)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// Every commit survives a power loss (the default).
    Full,
    /// Faster; the last commits before a power loss may be lost, never corrupted.
    Normal,
}

/// Limits on how a task may travel between agents; a field left out keeps the default.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct ChainPolicy {
    /// Most hops along one path of a task (its ancestors by `parent_id`, or the hop that gave
    /// `from_agent` its work); parallel handoffs are separate paths. None is 5.
    #[uniffi(default)]
    pub max_handoffs: Option<u64>,
    /// How many times an agent may appear again along a path; none is 0.
    #[uniffi(default)]
    pub max_revisits: Option<u64>,
    /// Who may hand off to whom; none allows every pair. A sender missing from the map may
    /// hand off to nobody.
    #[uniffi(default)]
    pub collaborators: Option<HashMap<String, Vec<String>>>,
}

/// Limits on the size of records; a field left out keeps the default.
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct Limits {
    /// The whole record in its JSON form, in bytes.
    #[uniffi(default)]
    pub max_record_bytes: Option<u64>,
    /// One text field or list item, in bytes.
    #[uniffi(default)]
    pub max_field_bytes: Option<u64>,
    /// Items in one list field.
    #[uniffi(default)]
    pub max_list_items: Option<u64>,
    /// Nesting depth of JSON text and of `metadata`; at most 100 (`MAX_DEPTH`), so that
    /// every reader can read back what was written: a store opened with more is refused with
    /// `Validation` on `max_depth`.
    #[uniffi(default)]
    pub max_depth: Option<u64>,
}

/// The chain policy and limits saved in a store (`Store.save_policy`), every field filled.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct SavedPolicy {
    /// The saved chain policy.
    pub policy: ChainPolicy,
    /// The saved limits.
    pub limits: Limits,
}

/// How a store is opened: by `open`, `open_read_only`, `memory` and `connect` alike. Each
/// store reads the options that concern it and leaves the others, so one set of options
/// serves any URL.
#[derive(Clone, Debug, Default, uniffi::Record)]
pub struct OpenOptions {
    /// How durable each write is (SQLite, a folder of JSON files); none is `Full`.
    #[uniffi(default)]
    pub synchronous: Option<Synchronous>,
    /// How long a write waits for another process's lock (which may be stopped or stuck)
    /// before it fails with `Busy`, having changed nothing (SQLite, a folder of JSON files);
    /// none is 60 seconds. Opening a current SQLite store and reading never wait for a writer.
    #[uniffi(default)]
    pub lock_patience: Option<Duration>,
    /// Opens an existing SQLite store for reading only, as `open_read_only` does: nothing on
    /// disk is created, migrated or changed, and writes fail with `Storage`. Any other store
    /// refuses it with `Validation` on `read_only`.
    #[uniffi(default = false)]
    pub read_only: bool,
    /// At most this many connections kept for reuse (PostgreSQL); none is 8.
    #[uniffi(default)]
    pub pool_size: Option<u64>,
    /// How long connecting may take before it fails with `Storage` (PostgreSQL); none is 10
    /// seconds.
    #[uniffi(default)]
    pub connect_timeout: Option<Duration>,
    /// The chain policy checked before every new hop, and when an open handoff is claimed
    /// (the claimant is the hop's real `to`); none applies the one saved in the store
    /// (`Store.save_policy`), else the default.
    #[uniffi(default)]
    pub policy: Option<ChainPolicy>,
    /// Size limits on records; none applies the ones saved in the store, else the defaults.
    #[uniffi(default)]
    pub limits: Option<Limits>,
    /// A clock to drive leases and expiry in tests; none is the system clock.
    #[uniffi(default)]
    pub clock: Option<Arc<ManualClock>>,
}

/// Which handoffs `Store.list` returns; a field left out does not filter. The names are the
/// arguments of `list` in every binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, uniffi::Record)]
pub struct ListFilter {
    /// Only records in this status.
    #[uniffi(default)]
    pub status: Option<HandoffStatus>,
    /// Only records of this task.
    #[uniffi(default)]
    pub task_id: Option<String>,
    /// Only records addressed to this agent.
    #[uniffi(default)]
    pub to_agent: Option<String>,
    /// Only records of this kind.
    #[uniffi(default)]
    pub kind: Option<HandoffKind>,
    /// At most this many records.
    #[uniffi(default)]
    pub limit: Option<u64>,
    /// Only records after the one with this id: the last of the previous page.
    #[uniffi(default)]
    pub after: Option<String>,
    /// Only pending records (seed 000's `pending_only`): the same as `status` pending, so not
    /// with a `status`.
    #[uniffi(default)]
    pub pending_only: bool,
}

/// A handoff store: create, claim, heartbeat, release, complete, and read the event log and
/// chains. Open one with `Store.open(path)` (SQLite), `Store.memory()` or `Store.connect(url)`
/// (any backend); `Store.capabilities()` says what the one opened can do.
///
/// Every method may be called from any thread; SQLite stores may be shared between
/// processes.
#[derive(Debug, uniffi::Object)]
pub struct Store {
    inner: core::Store,
}

#[uniffi::export]
impl Store {
    /// Opens (creating if needed) the SQLite store at `path`; `":memory:"` gives a private
    /// in-memory database. A new store's files are readable by their owner only; a file that
    /// is not a handoff-core store is refused before anything in it changes. With
    /// `options.read_only`, as `open_read_only`.
    #[uniffi::constructor(default(options))]
    pub fn open(path: String, options: OpenOptions) -> Result<Arc<Store>> {
        let settings = Settings::of(&options)?;
        let sqlite = connect_args(&options)?.sqlite();
        let store = if options.read_only {
            core::Store::open_read_only(&path, &sqlite)?
        } else {
            core::Store::open_with(&path, &sqlite)?
        };
        Ok(Arc::new(Store {
            inner: settings.apply(store),
        }))
    }

    /// Opens the existing SQLite store at `path` for reading only: nothing on disk is created,
    /// migrated or changed, so a read-only file or folder, or another user's store, can be
    /// read. Writes fail with `Storage`.
    #[uniffi::constructor(default(options))]
    pub fn open_read_only(path: String, options: OpenOptions) -> Result<Arc<Store>> {
        let settings = Settings::of(&options)?;
        let store = core::Store::open_read_only(&path, &connect_args(&options)?.sqlite())?;
        Ok(Arc::new(Store {
            inner: settings.apply(store),
        }))
    }

    /// An in-memory store, for tests and ephemeral swarms. `options.read_only` is refused
    /// (`Validation` on `read_only`), as by `connect("memory:")`.
    #[uniffi::constructor(default(options))]
    pub fn memory(options: OpenOptions) -> Result<Arc<Store>> {
        Store::connect("memory:".to_owned(), options)
    }

    /// Opens the store `url` names, as every binding, the CLI and the MCP server read it: a
    /// path or `sqlite:PATH` (SQLite), `memory:`, `files:DIR` (a folder of JSON files, made if
    /// needed), or `postgres://…` (also `postgresql://`) with `?schema=NAME` to keep several
    /// stores in one database. A URL that names no store is `Validation` on `url`, a bad schema
    /// name on `url.schema`, a bad TLS setting on `url.sslmode` or `url.sslrootcert` (TLS as
    /// libpq reads `sslmode`). Each store reads the `options` that concern it (see
    /// `OpenOptions`); `read_only` for a store other than SQLite is `Validation` on
    /// `read_only`.
    #[uniffi::constructor(default(options))]
    pub fn connect(url: String, options: OpenOptions) -> Result<Arc<Store>> {
        let settings = Settings::of(&options)?;
        let store = core::Store::connect_with(&url, &connect_args(&options)?.options())?;
        Ok(Arc::new(Store {
            inner: settings.apply(store),
        }))
    }

    /// What this store can do beyond what every store does: whether it outlives the
    /// process, can be shared by processes or by machines, writes backups, wakes waiting
    /// workers. It asks the store nothing, so it cannot fail.
    pub fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    /// Saves the chain policy and limits this store applies in the store itself, so that
    /// every process that opens it without its own (the CLI and the MCP server included)
    /// applies them.
    pub fn save_policy(&self) -> Result<()> {
        Ok(self.inner.save_policy()?)
    }

    /// The chain policy and limits saved with `save_policy`, if any.
    pub fn saved_policy(&self) -> Result<Option<SavedPolicy>> {
        Ok(self
            .inner
            .saved_policy()?
            .map(|(policy, limits)| SavedPolicy {
                policy: policy.into(),
                limits: limits.into(),
            }))
    }

    /// Creates a pending handoff. With a caller-supplied `id`, creating again with the same
    /// content returns the stored record; with other content it fails with `Conflict`.
    pub fn create(&self, options: CreateOptions) -> Result<Handoff> {
        self.run::<ops::Create>(options)
    }

    /// Creates a pending handoff from `create`'s arguments as a JSON object, such as an LLM's
    /// tool call carries them: the names and rules of `create` in every binding, the CLI and
    /// the MCP server (`reason` as text: `context_limit_85`, or `context_limit` with
    /// `context_pct`; `metadata` as an object). `Validation` lists every problem at once.
    pub fn create_json(&self, arguments_json: String) -> Result<Handoff> {
        let arguments: serde_json::Value = serde_json::from_str(&arguments_json).map_err(|e| {
            HandoffError::invalid("arguments_json", format!("is not valid JSON: {e}"))
        })?;
        self.run::<ops::Create>(arguments)
    }

    /// Creates several handoffs in one transaction: all of them, or none when one is refused.
    pub fn create_many(&self, items: Vec<CreateOptions>) -> Result<Vec<Handoff>> {
        self.run::<ops::CreateMany>(arguments! { items })
    }

    /// The handoff with this id; `NotFound` if there is none.
    pub fn get(&self, id: String) -> Result<Handoff> {
        self.run::<ops::Get>(arguments! { id })
    }

    /// Handoffs matching the filter, oldest first; page with `limit` and `after`.
    #[uniffi::method(default(filter))]
    pub fn list(&self, filter: ListFilter) -> Result<Vec<Handoff>> {
        self.run::<ops::List>(filter)
    }

    /// Claims the handoff `id` for `agent` for `lease` (none is 300 seconds). `AlreadyClaimed`
    /// while another claim is live; `InvalidTransition` when it is finished or addressed to
    /// another agent; `ChainViolation` when it is open (no `to_agent`) and the chain policy
    /// does not let its sender hand off to `agent`.
    #[uniffi::method(default(lease = None))]
    pub fn claim(&self, id: String, agent: String, lease: Option<Duration>) -> Result<Claim> {
        let lease_seconds = lease.map(|lease| lease.as_secs_f64());
        Ok(self
            .run::<ops::Claim>(arguments! { id, agent, lease_seconds })?
            .into())
    }

    /// Claims the oldest pending handoff `agent` may take (addressed to it, or open and allowed
    /// by the chain policy: open handoffs it may not take are skipped), optionally only of
    /// `task_id`; none when there is nothing to take. With `wait`, a worker that finds nothing
    /// sleeps up to that long (real time) until work arrives, and takes it: woken at once on
    /// PostgreSQL, by a short poll on the other stores. The call blocks its thread meanwhile.
    #[uniffi::method(default(task_id = None, lease = None, wait = None))]
    pub fn claim_next(
        &self,
        agent: String,
        task_id: Option<String>,
        lease: Option<Duration>,
        wait: Option<Duration>,
    ) -> Result<Option<Claim>> {
        let lease_seconds = lease.map(|lease| lease.as_secs_f64());
        let wait_seconds = wait.map(|wait| wait.as_secs_f64());
        let arguments = arguments! { agent, task_id, lease_seconds, wait_seconds };
        let claim = self.run::<ops::ClaimNext>(arguments)?;
        Ok(claim.map(Into::into))
    }

    /// Renews the claim's lease for its length, counted from now; `LeaseLost` when the claim
    /// is no longer current or its secret does not match (nothing changes). `progress`, JSON
    /// text of at most 4 KB, says how the work goes: the record keeps it until the next claim.
    #[uniffi::method(default(progress = None))]
    pub fn heartbeat(&self, claim: ClaimRef, progress: Option<String>) -> Result<Handoff> {
        let progress = progress.as_deref().map(JsonText);
        self.run::<ops::Heartbeat>(arguments! { claim, progress })
    }

    /// Gives the handoff back for another agent to claim; `LeaseLost` when the claim is no
    /// longer current or its secret does not match.
    pub fn release(&self, claim: ClaimRef, reason: String) -> Result<Handoff> {
        self.run::<ops::Release>(arguments! { claim, reason })
    }

    /// Reports that the work failed with `error`: pending again with one more attempt counted,
    /// or `failed` (the error its outcome) after the last of its `max_attempts`; `LeaseLost`
    /// when the claim is no longer current or its secret does not match.
    pub fn fail(&self, claim: ClaimRef, error: String) -> Result<Handoff> {
        self.run::<ops::Fail>(arguments! { claim, error })
    }

    /// Finishes the handoff with `outcome`; `LeaseLost` when the claim is no longer current
    /// or its secret does not match. `tokens_used`, the model tokens the work took if you count
    /// them, goes to the event log and, for a task's step, to the step's and task's metrics.
    #[uniffi::method(default(outcome = "", tokens_used = None))]
    pub fn complete(
        &self,
        claim: ClaimRef,
        outcome: String,
        tokens_used: Option<u64>,
    ) -> Result<Handoff> {
        self.run::<ops::Complete>(arguments! { claim, outcome, tokens_used })
    }

    /// Holds `claim` while its work runs (issue #19): the claim is renewed every third of its
    /// lease, from a thread of the library's own, until the `Lease` completes or fails it; a
    /// lease closed or released unsettled fails the claim, so the work goes back to the queue
    /// at once (see `Lease`). The claim is read as `heartbeat` reads it; nothing is written
    /// until the first heartbeat.
    pub fn lease(&self, claim: ClaimRef) -> Result<Arc<Lease>> {
        Lease::start(&self.inner, claim)
    }

    /// Withdraws the handoff as its holder, with the claim; `LeaseLost` when the claim is no
    /// longer current or its secret does not match.
    #[uniffi::method(default(reason = None))]
    pub fn cancel_claim(&self, claim: ClaimRef, reason: Option<String>) -> Result<Handoff> {
        self.run::<ops::CancelClaim>(arguments! { claim, reason })
    }

    /// The addressed agent (or the holder of an open handoff) refuses it.
    pub fn reject(&self, id: String, agent: String, reason: String) -> Result<Handoff> {
        self.run::<ops::Reject>(arguments! { id, agent, reason })
    }

    /// Withdraws a pending or claimed handoff as `by`, who must be its creator (`from_agent`),
    /// or anyone when it has none; anyone else gets `InvalidTransition`. Its holder cancels
    /// with `cancel_claim`.
    #[uniffi::method(default(reason = None))]
    pub fn cancel(&self, id: String, by: String, reason: Option<String>) -> Result<Handoff> {
        self.run::<ops::Cancel>(arguments! { id, by, reason })
    }

    /// Sends a `failed`, `rejected` or `cancelled` handoff back to `pending` for another try,
    /// its attempts counted from 0 again (the history keeps the earlier ones); any other
    /// status is `InvalidTransition`.
    #[uniffi::method(default(reason = None))]
    pub fn retry(&self, id: String, by: String, reason: Option<String>) -> Result<Handoff> {
        self.run::<ops::Retry>(arguments! { id, by, reason })
    }

    /// Takes a live claim away from its holder, as an operator (no secret needed): the handoff
    /// is pending again with one more attempt counted, and the holder's claim is `LeaseLost`.
    pub fn revoke_claim(&self, id: String, by: String, reason: String) -> Result<Handoff> {
        self.run::<ops::RevokeClaim>(arguments! { id, by, reason })
    }

    /// Changes a pending or claimed handoff's priority: `claim_next` takes the highest first
    /// (the default is 0).
    pub fn set_priority(&self, id: String, priority: i32, by: String) -> Result<Handoff> {
        self.run::<ops::SetPriority>(arguments! { id, priority, by })
    }

    /// Writes a portable backup of the whole store to `path` (a new file, readable by its
    /// owner only; an existing one is refused with `Validation`) while the store stays in use:
    /// any store restores it with `restore`.
    pub fn backup(&self, path: String) -> Result<()> {
        self.run::<ops::Backup>(arguments! { path })
    }

    /// Restores the backup at `path` into this store, which must be empty; a damaged or
    /// foreign file is refused with `Validation` naming `path`, and nothing is written.
    pub fn restore(&self, path: String) -> Result<()> {
        self.run::<ops::Restore>(arguments! { path })
    }

    /// Looks through the whole store for damage (files deleted, emptied or edited by hand,
    /// links planted, a bad disk) and names each piece. With `repair`, a files store moves what
    /// is damaged into its `quarantine/` folder and mends what referred to it; a database store
    /// reports only (restore a backup).
    #[uniffi::method(default(repair = false))]
    pub fn check(&self, repair: bool) -> Result<CheckReport> {
        self.run::<ops::Check>(arguments! { repair })
    }

    /// Settles every lapsed lease and expired handoff now; returns how many changed.
    pub fn reap(&self) -> Result<u64> {
        Ok(self.run::<ops::Reap>(arguments! {})? as u64)
    }

    /// A page of the event log, oldest first: the whole store's, or only handoff `id`'s, or
    /// only task `task_id`'s; after the cursor `after` (the `seq` of the last event already
    /// read), at most `limit` events. Read a long log page by page: pass the last `seq` of
    /// one page as the next one's `after`. Every text an event carries (a reason, an outcome,
    /// an error, the addressee) is redacted, as the CLI shows it, unless `redact` is false
    /// (the owner's opt-out).
    #[uniffi::method(default(id = None, task_id = None, after = None, limit = None, redact = true))]
    pub fn events(
        &self,
        id: Option<String>,
        task_id: Option<String>,
        after: Option<u64>,
        limit: Option<u64>,
        redact: bool,
    ) -> Result<Vec<Event>> {
        let arguments = arguments! { handoff_id: id, task_id, after, limit };
        let events = self.run::<ops::Events>(arguments)?;
        Ok(match redact {
            true => events.into_iter().map(crate::events::redacted).collect(),
            false => events,
        })
    }

    /// The task's hops in creation order.
    pub fn chain(&self, task_id: String) -> Result<Chain> {
        Ok(self.run::<ops::Chain>(arguments! { task_id })?.into())
    }

    /// Saves `agent`'s progress on `fields.task_id` without changing who owns what: a finished
    /// record of kind `Checkpoint` from and to `agent`. `fields` must leave `kind`,
    /// `from_agent` and `to_agent` out: the checkpoint sets them.
    pub fn checkpoint(&self, agent: String, fields: CreateOptions) -> Result<Handoff> {
        let arguments = arguments! { agent, #[serde(flatten)] fields };
        self.run::<ops::Checkpoint>(arguments)
    }

    /// Tasks in progress whose last sign of life (a claim, heartbeat or checkpoint) is older
    /// than `older_than`.
    pub fn stalled(&self, older_than: Duration) -> Result<Vec<String>> {
        let older_than_seconds = older_than.as_secs_f64();
        self.run::<ops::Stalled>(arguments! { older_than_seconds })
    }

    /// Counts and median times per (from, to) agent pair.
    pub fn stats(&self) -> Result<Vec<PathStats>> {
        self.run::<ops::Stats>(arguments! {})
    }

    /// The store at a glance, for operators and their monitoring: handoffs by status and
    /// addressee, events by kind, the time from creation to first claim and from claim to
    /// settling as histograms, open escalations and task steps by status.
    pub fn metrics(&self) -> Result<Metrics> {
        self.run::<ops::Metrics>(arguments! {})
    }

    /// The queue at a glance: how many handoffs are in each status, per addressee.
    pub fn queue_counts(&self) -> Result<Vec<QueueCount>> {
        self.run::<ops::QueueCounts>(arguments! {})
    }

    /// Creates a task (status `Pending`) named `name`, to achieve `goal`, with its plan of
    /// `steps`, checked whole: `Validation` lists every problem at once (duplicate step ids,
    /// unknown dependencies, cycles named as a path, agent names, sizes), and nothing is
    /// written when there is one. `context` (shared by every step) and `metadata` are JSON
    /// objects, as text; `orchestrator` is the sender of the steps' handoffs; a step that fails
    /// on every attempt goes to `escalate_to` (none is `human`). `start_task` offers its first
    /// steps.
    /// `id` is the caller's choice (the branch is then `task/<id>`), `goal` defaults to the
    /// name, and each of `objectives` becomes a step `"1"`, `"2"`, ... without an agent,
    /// offered to the task's members (`join_task`).
    #[uniffi::method(default(
        goal = "",
        steps = [],
        success_criteria = [],
        context = None,
        metadata = None,
        orchestrator = None,
        escalate_to = None,
        id = None,
        objectives = []
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn create_task(
        &self,
        name: String,
        goal: String,
        steps: Vec<StepSpec>,
        success_criteria: Vec<String>,
        context: Option<String>,
        metadata: Option<String>,
        orchestrator: Option<String>,
        escalate_to: Option<String>,
        id: Option<String>,
        objectives: Vec<String>,
    ) -> Result<Task> {
        let arguments = arguments! {
            name, goal, steps, success_criteria, id, objectives,
            context: context.as_deref().map(ObjectText),
            metadata: metadata.as_deref().map(ObjectText),
            orchestrator, escalate_to,
        };
        Ok(self.run::<ops::CreateTask>(arguments)?.into())
    }

    /// Starts a pending task: the steps that wait for nothing are offered as handoffs to their
    /// agents, who take them with `claim_next`.
    pub fn start_task(&self, id: String) -> Result<Task> {
        Ok(self.run::<ops::StartTask>(arguments! { id })?.into())
    }

    /// The task with this id, with its plan and each step's status; `NotFound` if there is
    /// none.
    pub fn get_task(&self, id: String) -> Result<Task> {
        Ok(self.run::<ops::GetTask>(arguments! { id })?.into())
    }

    /// Task summaries (no steps), oldest first, optionally only those in `status`; page with
    /// `limit` and `after` (the id of the last task of the previous page).
    #[uniffi::method(default(status = None, limit = None, after = None))]
    pub fn list_tasks(
        &self,
        status: Option<TaskStatus>,
        limit: Option<u64>,
        after: Option<String>,
    ) -> Result<Vec<TaskSummary>> {
        self.run::<ops::ListTasks>(arguments! { status, limit, after })
    }

    /// Changes the task if it is still at `expected_version` (compare-and-swap), else
    /// `Conflict` naming both versions, and nothing changes: each field given replaces the
    /// task's (`context` and `metadata` JSON objects as text, `artifacts` and `issues` JSON
    /// values as text), and `add_steps` extends its plan, checked with it (every problem at
    /// once).
    #[uniffi::method(default(
        goal = None,
        success_criteria = None,
        context = None,
        metadata = None,
        add_steps = [],
        artifacts = None,
        issues = None
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn update_task(
        &self,
        id: String,
        expected_version: u64,
        goal: Option<String>,
        success_criteria: Option<Vec<String>>,
        context: Option<String>,
        metadata: Option<String>,
        add_steps: Vec<StepSpec>,
        artifacts: Option<Vec<String>>,
        issues: Option<Vec<String>>,
    ) -> Result<Task> {
        let arguments = arguments! {
            id, expected_version, goal, success_criteria,
            context: context.as_deref().map(ObjectText),
            metadata: metadata.as_deref().map(ObjectText),
            add_steps,
            artifacts: artifacts.as_deref().map(JsonTexts),
            issues: issues.as_deref().map(JsonTexts),
        };
        Ok(self.run::<ops::UpdateTask>(arguments)?.into())
    }

    /// Pauses a task: its offers nobody holds are withdrawn and no step is offered until it
    /// resumes; steps already claimed may finish.
    pub fn pause_task(&self, id: String) -> Result<Task> {
        Ok(self.run::<ops::PauseTask>(arguments! { id })?.into())
    }

    /// Resumes a paused task: the steps whose dependencies finished meanwhile are offered.
    pub fn resume_task(&self, id: String) -> Result<Task> {
        Ok(self.run::<ops::ResumeTask>(arguments! { id })?.into())
    }

    /// Cancels a task: offers nobody took are withdrawn and its unfinished steps cancelled;
    /// steps already claimed may finish.
    #[uniffi::method(default(reason = None))]
    pub fn cancel_task(&self, id: String, reason: Option<String>) -> Result<Task> {
        Ok(self
            .run::<ops::CancelTask>(arguments! { id, reason })?
            .into())
    }

    /// Reports that a step's work failed with `error`, with the step's claim: the step is
    /// offered again while attempts remain, then escalated (the task paused until
    /// `resolve_escalation`). `InvalidTransition` for a handoff that carries no step.
    pub fn fail_step(&self, claim: ClaimRef, error: String) -> Result<Handoff> {
        self.run::<ops::FailStep>(arguments! { claim, error })
    }

    /// A human's answer to a step that failed on every attempt, with the escalation's claim:
    /// the escalation completes with `resolution`, and the step is offered again with its
    /// attempts reset (`retry`) or skipped, its dependents going on without it; a task the
    /// escalation paused resumes.
    #[uniffi::method(default(retry = false))]
    pub fn resolve_escalation(
        &self,
        claim: ClaimRef,
        resolution: String,
        retry: bool,
    ) -> Result<Task> {
        let arguments = arguments! { claim, resolution, retry };
        Ok(self.run::<ops::ResolveEscalation>(arguments)?.into())
    }

    /// `agent` joins the task, with an optional `role`; the steps named in `objectives` (steps
    /// without an agent, such as objectives `"1"`, `"2"`, ...) are assigned to it. Its branch
    /// is `task/<id>/<agent>`; the log and replay show an `agent_join`.
    #[uniffi::method(default(role = None, objectives = []))]
    pub fn join_task(
        &self,
        id: String,
        agent: String,
        role: Option<String>,
        objectives: Vec<String>,
    ) -> Result<Task> {
        let arguments = arguments! { id, agent, role, objectives };
        Ok(self.run::<ops::JoinTask>(arguments)?.into())
    }

    /// Completes a task on its caller's word, with `result_summary`: steps nobody holds are
    /// skipped; a step a worker holds refuses it. With `merge_to_main`, in the same
    /// transaction, the verified knowledge of every branch of the task reaches `main`.
    #[uniffi::method(default(result_summary = None, merge_to_main = false))]
    pub fn complete_task(
        &self,
        id: String,
        result_summary: Option<String>,
        merge_to_main: bool,
    ) -> Result<Task> {
        let arguments = arguments! { id, result_summary, merge_to_main };
        Ok(self.run::<ops::CompleteTask>(arguments)?.into())
    }

    /// Fails a task for `reason`: offers and escalations nobody holds are withdrawn, claimed
    /// steps may finish; its history says it failed.
    pub fn fail_task(&self, id: String, reason: String) -> Result<Task> {
        Ok(self.run::<ops::FailTask>(arguments! { id, reason })?.into())
    }

    /// The holder of a step hands it on, with its claim, as an escalation to `to_agent`
    /// linked to the step; completing the escalation completes the step. Returns the
    /// escalation.
    #[uniffi::method(default(instructions = None, blockers = [], priority_items = []))]
    pub fn escalate_step(
        &self,
        claim: ClaimRef,
        to_agent: String,
        instructions: Option<String>,
        blockers: Vec<String>,
        priority_items: Vec<String>,
    ) -> Result<Handoff> {
        let arguments = arguments! { claim, to_agent, instructions, blockers, priority_items };
        self.run::<ops::EscalateStep>(arguments)
    }

    /// Runs a task again: a new pending task with the plan of `task_id`, or of the task
    /// `bundle_id` was made from, with other `agents` (by step id or earlier agent),
    /// `instructions` (by step id) or `context` (a JSON object as text, merged over the
    /// earlier one); its branch starts with the earlier run's verified knowledge, and its
    /// metadata names the earlier run (`rerun_of`).
    #[uniffi::method(default(
        task_id = None,
        bundle_id = None,
        id = None,
        name = None,
        agents = None,
        instructions = None,
        context = None
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn rerun_task(
        &self,
        task_id: Option<String>,
        bundle_id: Option<String>,
        id: Option<String>,
        name: Option<String>,
        agents: Option<HashMap<String, String>>,
        instructions: Option<HashMap<String, String>>,
        context: Option<String>,
    ) -> Result<Task> {
        let (agents, instructions) = (agents.unwrap_or_default(), instructions.unwrap_or_default());
        let arguments = arguments! {
            task_id, bundle_id, id, name, agents, instructions,
            context: context.as_deref().map(ObjectText),
        };
        Ok(self.run::<ops::RerunTask>(arguments)?.into())
    }

    /// The task's log, oldest first: created, started, each step offered, started, completed,
    /// failed, escalated or skipped, paused, resumed, updated, cancelled, completed.
    pub fn task_events(&self, id: String) -> Result<Vec<TaskEvent>> {
        let events = self.run::<ops::TaskEvents>(arguments! { id })?;
        Ok(events.into_iter().map(TaskEvent::from).collect())
    }

    /// Finished tasks, newest first, at most `limit`, in the seed's `task-history.json` form.
    #[uniffi::method(default(limit = None))]
    pub fn task_history(&self, limit: Option<u64>) -> Result<Vec<HistoryEntry>> {
        self.run::<ops::TaskHistory>(arguments! { limit })
    }

    /// Statistics over every finished task: how many, the share that succeeded, the mean
    /// duration, and how many ended each way.
    pub fn task_statistics(&self) -> Result<TaskStatistics> {
        Ok(self.run::<ops::TaskStatistics>(arguments! {})?.into())
    }

    /// Keeps the steps, log and handoffs of the newest `keep_last` finished tasks (none is
    /// 100) finished less than `keep_details_days` ago (none is 30); older finished tasks keep
    /// only their history entry. Unfinished tasks are never touched. Returns how many tasks
    /// were pruned.
    #[uniffi::method(default(keep_last = None, keep_details_days = None))]
    pub fn prune(&self, keep_last: Option<u64>, keep_details_days: Option<u32>) -> Result<u64> {
        let pruned = self.run::<ops::Prune>(arguments! { keep_last, keep_details_days })?;
        Ok(pruned as u64)
    }

    /// The memory of `scope` (`agent:writer`, `session:s1`, `shared`, ...) with its version;
    /// none when nothing was written there.
    pub fn memory_get(&self, scope: String) -> Result<Option<Memory>> {
        let memory = self.run::<ops::MemoryGet>(arguments! { scope })?;
        Ok(memory)
    }

    /// Writes `value`, a JSON object as text, as the memory of `scope`. With
    /// `expected_version` (0: nothing written yet) the write happens only if the scope is
    /// still at that version, else `Conflict` naming both versions.
    #[uniffi::method(default(expected_version = None))]
    pub fn memory_put(
        &self,
        scope: String,
        value: String,
        expected_version: Option<u64>,
    ) -> Result<Memory> {
        let arguments = arguments! { scope, value: ObjectText(&value), expected_version };
        self.run::<ops::MemoryPut>(arguments)
    }

    /// Reads the memory of `scope` (`{}` when nothing was written), gives it to `updater` and
    /// writes what it returns if nobody wrote meanwhile; otherwise reads and gives it again.
    /// When `updater` throws, nothing is written: a `HandoffError` comes out as thrown,
    /// anything else as `Foreign`.
    pub fn memory_update(&self, scope: String, updater: Arc<dyn MemoryUpdater>) -> Result<Memory> {
        let memory = self
            .inner
            .memory_update(&scope, memory::change(updater.as_ref()))?;
        Ok(memory)
    }

    /// Every scope's memory whose scope starts with `prefix` (all without one), in scope
    /// order.
    #[uniffi::method(default(prefix = None))]
    pub fn memory_list(&self, prefix: Option<String>) -> Result<Vec<Memory>> {
        self.run::<ops::MemoryList>(arguments! { prefix })
    }

    /// Forgets the memory of `scope`; with `expected_version`, only if it is still at it
    /// (`Conflict` otherwise). Whether there was anything to forget.
    #[uniffi::method(default(expected_version = None))]
    pub fn memory_delete(&self, scope: String, expected_version: Option<u64>) -> Result<bool> {
        self.run::<ops::MemoryDelete>(arguments! { scope, expected_version })
    }

    /// Who currently owns the conversation `session_id` (the holder of its latest handoff
    /// once taken, else its sender), its handoffs as hops, and its shared context (the memory
    /// `session:<id>`).
    pub fn session(&self, session_id: String) -> Result<Session> {
        self.run::<ops::Session>(arguments! { session_id })
    }

    /// Starts a manager/worker run on task `task_id` (docs/design.md §8): the initialization
    /// (iteration 1, returned) goes to `worker`, who takes it with `claim_next` and answers
    /// with `report` or `report_error`. The manager → worker checks run first (instructions
    /// given, at least one success criterion), every problem at once; a task runs the protocol
    /// once. `max_iterations` (none is 10) and `max_retries` (none is 3) bound the run before it
    /// escalates by itself to `escalate_to` (none is `human`).
    #[uniffi::method(default(
        context = None,
        quality_gates = [],
        max_iterations = None,
        max_retries = None,
        escalate_to = None
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn initialize(
        &self,
        task_id: String,
        manager: String,
        worker: String,
        instructions: String,
        success_criteria: Vec<String>,
        context: Option<InitContext>,
        quality_gates: Vec<String>,
        max_iterations: Option<u32>,
        max_retries: Option<u32>,
        escalate_to: Option<String>,
    ) -> Result<Handoff> {
        let arguments = arguments! {
            task_id, manager, worker, instructions, success_criteria, context, quality_gates,
            max_iterations, max_retries, escalate_to,
        };
        self.run::<ops::Initialize>(arguments)
    }

    /// The worker's report on the instructions it holds, with their claim: a `Progress`
    /// message goes to the manager (returned). The worker → manager checks run first: every
    /// changed file described, `issues` given unless the status is `Completed`.
    #[uniffi::method(default(
        accomplished = [],
        files_modified = [],
        tests = None,
        issues = [],
        validation = []
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn report(
        &self,
        claim: ClaimRef,
        status: WorkerStatus,
        accomplished: Vec<String>,
        files_modified: Vec<FileChange>,
        tests: Option<Tests>,
        issues: Vec<String>,
        validation: Vec<String>,
    ) -> Result<Handoff> {
        let arguments = arguments! {
            claim, status, accomplished, files_modified, tests, issues, validation,
        };
        self.run::<ops::Report>(arguments)
    }

    /// The manager's decision on the report (or the human's resolution) it holds, with its
    /// claim. `Continue` and `Refine` send `instructions` to the worker for the next iteration
    /// (or, past `max_iterations`, an escalation), returned; `Complete` ends the run and
    /// returns none; `Escalate` sends `escalation_details` to whoever the run escalates to.
    #[uniffi::method(default(
        instructions = None,
        context_updates = None,
        escalation_details = None,
        summary = None
    ))]
    pub fn decide(
        &self,
        claim: ClaimRef,
        decision: Decision,
        instructions: Option<String>,
        context_updates: Option<ContextUpdates>,
        escalation_details: Option<EscalationDetails>,
        summary: Option<String>,
    ) -> Result<Option<Handoff>> {
        let arguments = arguments! {
            claim, decision, instructions, context_updates, escalation_details, summary,
        };
        self.run::<ops::Decide>(arguments)
    }

    /// The worker's error report on the instructions it holds, with their claim: an
    /// `ErrorRecovery` message goes to the manager (returned), who answers with `recover` or
    /// `escalate`.
    #[uniffi::method(default(
        context = "",
        attempted_solutions = [],
        error_messages = [],
        affected_files = []
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn report_error(
        &self,
        claim: ClaimRef,
        error_type: ErrorType,
        severity: Severity,
        description: String,
        context: String,
        attempted_solutions: Vec<String>,
        error_messages: Vec<String>,
        affected_files: Vec<String>,
    ) -> Result<Handoff> {
        let arguments = arguments! {
            claim, error_type, severity, description, context, attempted_solutions,
            error_messages, affected_files,
        };
        self.run::<ops::ReportError>(arguments)
    }

    /// The manager's recovery steps for the error report it holds, with its claim: an
    /// `ErrorRecovery` message goes to the worker with one retry more (returned); past
    /// `max_retries` the run escalates instead.
    #[uniffi::method(default(
        alternatives = [],
        success_indicators = [],
        escalation_trigger = None
    ))]
    pub fn recover(
        &self,
        claim: ClaimRef,
        strategy: String,
        steps: Vec<String>,
        alternatives: Vec<String>,
        success_indicators: Vec<String>,
        escalation_trigger: Option<String>,
    ) -> Result<Handoff> {
        let arguments = arguments! {
            claim, strategy, steps, alternatives, success_indicators, escalation_trigger,
        };
        self.run::<ops::Recover>(arguments)
    }

    /// The manager hands the run to a human, with the claim of the report, error report or
    /// resolution it holds: an `Escalation` goes to whoever the run escalates to (returned),
    /// with the whole history (`complete_history`) and where the work stands
    /// (`current_state`). The severity is at least `Medium`; each text must say something.
    #[allow(clippy::too_many_arguments)]
    pub fn escalate(
        &self,
        claim: ClaimRef,
        category: Category,
        severity: Severity,
        urgency: Urgency,
        blocker_type: BlockerType,
        description: String,
        impact: String,
        recommendation: String,
    ) -> Result<Handoff> {
        let arguments = arguments! {
            claim, category, severity, urgency, blocker_type, description, impact,
            recommendation,
        };
        self.run::<ops::Escalate>(arguments)
    }

    /// A human's answer to the escalation they hold, with its claim: a `Progress` message
    /// carrying `resolution` (and `resume_instructions`, if given) as its
    /// `resume_instructions` goes to the manager (returned), who decides how the worker goes
    /// on; the run's iteration and retry allowances start afresh.
    #[uniffi::method(default(resume_instructions = None))]
    pub fn resolve(
        &self,
        claim: ClaimRef,
        resolution: String,
        resume_instructions: Option<String>,
    ) -> Result<Handoff> {
        let arguments = arguments! { claim, resolution, resume_instructions };
        self.run::<ops::Resolve>(arguments)
    }

    /// The protocol run of task `task_id` as it stands: its phase (who holds the latest
    /// message), the iteration, retries, escalations, history and the id of the message in
    /// flight; `NotFound` if the task has none.
    pub fn protocol_run(&self, task_id: String) -> Result<ProtocolRun> {
        self.run::<ops::ProtocolRun>(arguments! { task_id })
    }

    /// The messages of task `task_id`'s run, oldest first, each a handoff with its `protocol`
    /// body.
    pub fn protocol_history(&self, task_id: String) -> Result<Vec<Handoff>> {
        self.run::<ops::ProtocolHistory>(arguments! { task_id })
    }

    /// How the store's protocol runs went: runs, completions, the first-try completion rate,
    /// the escalation rate, retries, iterations per run, the median time per iteration, and
    /// each run.
    pub fn protocol_stats(&self) -> Result<ProtocolStats> {
        self.run::<ops::ProtocolStats>(arguments! {})
    }

    /// Writes a conversation on `branch` (`main`, `task/<task id>` or
    /// `task/<task id>/<agent>`, created on first use), its messages numbered from 1 (`seq`).
    /// `task_id` and `agent` default to the branch's. A bad branch, a message the core cannot
    /// read (`messages[i]...`) or one over the size limits is `Validation`, every problem at
    /// once, and nothing is written.
    #[uniffi::method(default(title = None, task_id = None, agent = None))]
    pub fn add_conversation(
        &self,
        branch: String,
        messages: Vec<ContextMessage>,
        title: Option<String>,
        task_id: Option<String>,
        agent: Option<String>,
    ) -> Result<Conversation> {
        let arguments = arguments! { branch, messages, title, task_id, agent };
        self.run::<ops::AddConversation>(arguments)
    }

    /// Adds messages at the end of the conversation `conversation_id`, numbered after its
    /// last; the conversation after the change.
    pub fn append_messages(
        &self,
        conversation_id: String,
        messages: Vec<ContextMessage>,
    ) -> Result<Conversation> {
        let arguments = arguments! { conversation_id, messages };
        self.run::<ops::AppendMessages>(arguments)
    }

    /// The conversation with this id; `NotFound` if there is none.
    pub fn get_conversation(&self, id: String) -> Result<Conversation> {
        self.run::<ops::GetConversation>(arguments! { id })
    }

    /// The messages `from_seq..=to_seq` of the conversation `id` (all of them by default), in
    /// order, each with its `seq` and where it was cherry-picked to.
    #[uniffi::method(default(from_seq = None, to_seq = None))]
    pub fn messages(
        &self,
        id: String,
        from_seq: Option<u64>,
        to_seq: Option<u64>,
    ) -> Result<Vec<StoredMessage>> {
        let messages = self.run::<ops::Messages>(arguments! { id, from_seq, to_seq })?;
        Ok(messages.into_iter().map(StoredMessage::from).collect())
    }

    /// The conversations on `branch`, of `task_id`, or of the whole store, oldest first.
    #[uniffi::method(default(branch = None, task_id = None))]
    pub fn list_conversations(
        &self,
        branch: Option<String>,
        task_id: Option<String>,
    ) -> Result<Vec<Conversation>> {
        self.run::<ops::ListConversations>(arguments! { branch, task_id })
    }

    /// Copies the messages `from_seq..=to_seq` of a conversation (all of it by default) into
    /// a new conversation on `target_branch` (returned); the source messages are marked
    /// `cherry_picked_to` it. A range outside the conversation, or `from_seq` after `to_seq`,
    /// is `Validation` on `from_seq` / `to_seq`, and nothing is written.
    ///
    /// With `verify` (true by default when a `verifier` is given), `verifier` scores the pick
    /// before it is written (verified at 0.6, invalidated below 0.4) and it is written with
    /// its verdict; `verify` without a verifier is `Validation` on `verify`. When the verifier
    /// throws, nothing is written: a `HandoffError` comes out as thrown, anything else as
    /// `Foreign`.
    #[uniffi::method(default(
        from_seq = None,
        to_seq = None,
        title = None,
        verify = None,
        verifier = None
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn cherry_pick(
        &self,
        conversation_id: String,
        target_branch: String,
        from_seq: Option<u64>,
        to_seq: Option<u64>,
        title: Option<String>,
        verify: Option<bool>,
        verifier: Option<Arc<dyn Verifier>>,
    ) -> Result<Conversation> {
        let arguments =
            arguments! { conversation_id, target_branch, from_seq, to_seq, title, verify };
        let arguments: ops::CherryPickArgs = arguments::read_for(&self.inner, &arguments)?;
        let conversation = match verifier {
            None => ops::CherryPick::run_with(&self.inner, arguments, None)?,
            Some(verifier) => {
                let mut verifier = StrictVerifier::new(verifier);
                ops::CherryPick::run_with(&self.inner, arguments, Some(&mut verifier))
                    .map_err(|error| verifier.error(error))?
            }
        };
        Ok(conversation)
    }

    /// Draws facts from a conversation and writes them on `target_branch` as candidates
    /// (`Active`, for `verify` to check later), returned: by `extractor`, or without one by the
    /// heuristics (sentences of the assistant's messages that state a conclusion or a decision
    /// — "the root cause is", "fixed by", "I'll", "the approach is" — or name a file or a
    /// number). A fact the extractor draws that breaks the rules of a fact is `Validation`
    /// (`facts[1].text`); when it throws, nothing is written: a `HandoffError` comes out as
    /// thrown, anything else as `Foreign`.
    #[uniffi::method(default(extractor = None))]
    pub fn cherry_pick_to_facts(
        &self,
        conversation_id: String,
        target_branch: String,
        extractor: Option<Arc<dyn FactExtractor>>,
    ) -> Result<Vec<Fact>> {
        let arguments: ops::CherryPickToFactsArgs =
            arguments::read_for(&self.inner, &arguments! { conversation_id, target_branch })?;
        Ok(match extractor {
            None => ops::CherryPickToFacts::run_with(&self.inner, arguments, None)?,
            Some(extractor) => {
                let mut extractor = ForeignExtractor::new(extractor);
                ops::CherryPickToFacts::run_with(&self.inner, arguments, Some(&mut extractor))
                    .map_err(|error| extractor.error(error))?
            }
        })
    }

    /// Copies a conversation's decision points into a new conversation on `target_branch`
    /// (returned). Without a `judge`, the seed's heuristics pick assistant messages that state
    /// an approach ("I'll", "let me", "the approach", "decided"), the first one after a tool
    /// that failed, and the one that leads to a tool call that succeeded; with one, the judge
    /// decides for every message. When the judge throws, nothing is written: a `HandoffError`
    /// comes out as thrown, anything else as `Foreign`.
    #[uniffi::method(default(judge = None))]
    pub fn cherry_pick_decisions(
        &self,
        conversation_id: String,
        target_branch: String,
        judge: Option<Arc<dyn DecisionJudge>>,
    ) -> Result<Conversation> {
        let arguments: ops::CherryPickDecisionsArgs =
            arguments::read_for(&self.inner, &arguments! { conversation_id, target_branch })?;
        let conversation = match judge {
            None => ops::CherryPickDecisions::run_with(&self.inner, arguments, None)?,
            Some(judge) => {
                let mut judge = ForeignJudge::new(judge);
                ops::CherryPickDecisions::run_with(&self.inner, arguments, Some(&mut judge))
                    .map_err(|error| judge.error(error))?
            }
        };
        Ok(conversation)
    }

    /// Copies a conversation's tool-call sequences (each call with its results) into a new
    /// conversation on `target_branch` (returned).
    pub fn cherry_pick_tools(
        &self,
        conversation_id: String,
        target_branch: String,
    ) -> Result<Conversation> {
        let arguments = arguments! { conversation_id, target_branch };
        self.run::<ops::CherryPickTools>(arguments)
    }

    /// Writes `facts` on `branch` (status `Active`), checked whole first: `Validation` lists
    /// every problem at once (`facts[1].text` empty, `facts[2].confidence` outside 0..1, a
    /// bad branch), and nothing is written when there is one.
    pub fn add_facts(&self, branch: String, facts: Vec<NewFact>) -> Result<Vec<Fact>> {
        self.run::<ops::AddFacts>(arguments! { branch, facts })
    }

    /// The facts on `branch`, oldest first; with `status`, only those in it.
    #[uniffi::method(default(status = None))]
    pub fn facts(&self, branch: String, status: Option<FactStatus>) -> Result<Vec<Fact>> {
        self.run::<ops::Facts>(arguments! { branch, status })
    }

    /// Every branch that holds a conversation or a fact, with its parent, in name order.
    pub fn branches(&self) -> Result<Vec<BranchInfo>> {
        self.run::<ops::Branches>(arguments! {})
    }

    /// Scores the facts and conversations on `branch` with `verifier` and stores the
    /// verdicts: a fact scoring at least `fact_threshold` (none is 0.7) is verified, a
    /// conversation at least `conversation_threshold` (none is 0.6); below
    /// `invalidate_below` (none is 0.4) either is invalidated. Without a verifier every score
    /// is the neutral 0.5: nothing is verified, invalidated or blocked. An item the verifier
    /// throws on, or scores with NaN or outside 0..1, is left as it was and reported
    /// (`VerifiedItem.error`); the others are verified.
    #[uniffi::method(default(
        verifier = None,
        fact_threshold = None,
        invalidate_below = None,
        conversation_threshold = None
    ))]
    pub fn verify(
        &self,
        branch: String,
        verifier: Option<Arc<dyn Verifier>>,
        fact_threshold: Option<f64>,
        invalidate_below: Option<f64>,
        conversation_threshold: Option<f64>,
    ) -> Result<VerifyReport> {
        let arguments = arguments! {
            branch,
            fact_threshold: Finite(fact_threshold),
            invalidate_below: Finite(invalidate_below),
            conversation_threshold: Finite(conversation_threshold),
        };
        let arguments: ops::VerifyArgs = arguments::read_for(&self.inner, &arguments)?;
        let mut verifier = verifier.map(ForeignVerifier::new);
        let verifier = verifier
            .as_mut()
            .map(|v| v as &mut dyn handoff_core::curation::Verifier);
        Ok(ops::Verify::run_with(&self.inner, arguments, verifier)?)
    }

    /// Moves the verified knowledge on `branch` into its parent (or `into`): verified facts
    /// are copied (their sources become `Promoted`) and verified or cherry-picked
    /// conversations are copied with their messages; unverified and invalidated items stay.
    /// Merging twice adds nothing.
    #[uniffi::method(default(into = None))]
    pub fn merge(&self, branch: String, into: Option<String>) -> Result<MergeReport> {
        self.run::<ops::Merge>(arguments! { branch, into })
    }

    /// The successor's packet for the handoff `handoff_id`: everything the store knows that the
    /// next agent needs — the task's goal and plan with the current step, the outcomes of the
    /// steps it depends on and earlier errors, the agents before it, the task's verified
    /// knowledge, the predecessor's own findings (marked unverified) and its conversation's
    /// tail, the facts on `main` most relevant to it, and the branch to continue on — redacted,
    /// with the manifest of what was kept, cut, summarised and left out.
    ///
    /// Its budget is `budget_tokens`, or `budget_chars` characters of its Markdown (not both;
    /// none is 2000 tokens; 0 is refused naming the argument). `transcript` is the framework's
    /// own conversation of the run, one more conversation under the same budget and
    /// redaction. With a `summarizer`, an item that does not fit whole is compressed by it
    /// (listed in `manifest.summarized`) instead of cut.
    #[uniffi::method(default(
        budget_tokens = None,
        budget_chars = None,
        transcript = None,
        summarizer = None
    ))]
    pub fn context_for(
        &self,
        handoff_id: String,
        budget_tokens: Option<u64>,
        budget_chars: Option<u64>,
        transcript: Option<Vec<ContextMessage>>,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> Result<Packet> {
        let arguments = arguments! { handoff_id, budget_tokens, budget_chars, transcript };
        let arguments: ops::ContextForArgs = arguments::read_for(&self.inner, &arguments)?;
        let mut options = arguments.options()?;
        if let Some(summarizer) = summarizer {
            options = options.summarizer(ForeignSummarizer(summarizer));
        }
        Ok(self
            .inner
            .context_for(&arguments.handoff_id, options)?
            .into())
    }

    /// The curation log of task `task_id` (every change on its branches: conversations
    /// added, messages appended, cherry-picks, facts, verifications, merges, bundles made and
    /// imported), or of `main` without one, in the order written.
    #[uniffi::method(default(task_id = None))]
    pub fn curation_events(&self, task_id: Option<String>) -> Result<Vec<CurationEvent>> {
        self.run::<ops::CurationEvents>(arguments! { task_id })
    }

    /// Packages task `task_id`'s knowledge (its `task/<task id>` branch and its agents'), or
    /// `branch`'s, as a bundle: its verified facts and key conversations (verified or
    /// cherry-picked) with their messages, the task's summary and the scores; with
    /// `verified_only = false`, everything not invalidated. Secrets in every text are replaced
    /// with `[REDACTED:<rule>]` unless `redact = false`. `visibility` (none is `Private`)
    /// says who may find it by its share token, `bundle_type` (none is `TaskExport`) what it
    /// is. Neither a task nor a branch, or a bad one, is `Validation` naming `task_id` or
    /// `branch`, and nothing is written.
    #[uniffi::method(default(
        task_id = None,
        branch = None,
        verified_only = true,
        visibility = None,
        bundle_type = None,
        tags = [],
        description = None,
        redact = true
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn create_bundle(
        &self,
        name: String,
        task_id: Option<String>,
        branch: Option<String>,
        verified_only: bool,
        visibility: Option<Visibility>,
        bundle_type: Option<BundleType>,
        tags: Vec<String>,
        description: Option<String>,
        redact: bool,
    ) -> Result<Bundle> {
        let arguments = arguments! {
            name, task_id, branch, verified_only, visibility, bundle_type, tags, description,
            redact,
        };
        self.run::<ops::CreateBundle>(arguments)?.try_into()
    }

    /// The bundle with this id; `NotFound` if there is none.
    pub fn get_bundle(&self, id: String) -> Result<Bundle> {
        self.run::<ops::GetBundle>(arguments! { id })?.try_into()
    }

    /// The store's bundles, oldest first; with `visibility`, only those of it.
    #[uniffi::method(default(visibility = None))]
    pub fn list_bundles(&self, visibility: Option<Visibility>) -> Result<Vec<Bundle>> {
        bundles::bundles(self.run::<ops::ListBundles>(arguments! { visibility })?)
    }

    /// The bundle a share token (`kb_…`) opens. A private bundle is never found by its token:
    /// a wrong token, a private bundle's and a deleted bundle's all give the same `NotFound`.
    pub fn bundle_by_token(&self, token: String) -> Result<Bundle> {
        self.run::<ops::BundleByToken>(arguments! { token })?
            .try_into()
    }

    /// Changes who may find the bundle `id` by its token; the bundle after the change.
    pub fn set_visibility(&self, id: String, visibility: Visibility) -> Result<Bundle> {
        self.run::<ops::SetVisibility>(arguments! { id, visibility })?
            .try_into()
    }

    /// Signs the bundle `id` with `secret_key` (`ed25519-secret:…`, from
    /// `generate_bundle_key()`): a store that trusts its public key imports the bundle's
    /// verdicts as verified. The signature travels in `portable_json`. Another key is
    /// `Validation` naming `secret_key` (the key not quoted); no such bundle, `NotFound`.
    pub fn sign_bundle(&self, id: String, secret_key: String) -> Result<Bundle> {
        self.run::<ops::SignBundle>(arguments! { id, secret_key })?
            .try_into()
    }

    /// Trusts the public keys `trust` (each `ed25519:…`) to vouch for bundles and stops
    /// trusting `distrust`: a bundle signed by a trusted key is imported with its verdicts; any
    /// other bundle's verdicts stay its claim. Every bad key is `Validation` naming it
    /// (`trust[0]`), and nothing changes then. The keys trusted afterwards, in key order (none
    /// given: only lists them).
    #[uniffi::method(default(trust = [], distrust = []))]
    pub fn trust_bundle_keys(
        &self,
        trust: Vec<String>,
        distrust: Vec<String>,
    ) -> Result<Vec<TrustedKey>> {
        self.run::<ops::TrustBundleKeys>(arguments! { trust, distrust })
    }

    /// Deletes the bundle `id` and its share token; what was imported from it stays.
    /// `NotFound` if there is none.
    pub fn delete_bundle(&self, id: String) -> Result<()> {
        self.run::<ops::DeleteBundle>(arguments! { id })
    }

    /// Imports a bundle's portable JSON (`Bundle.portable_json`, from this store or another)
    /// into `target_branch` (none is `main`), checked whole before anything is written: its
    /// size and nesting before it is parsed, then the schema version, the content hash, the
    /// signature, every id, text and message. A bundle that fails is `Validation` naming what
    /// failed (`schema_version`, `content_hash`, `signature`, `facts[0].text`, ...) and nothing
    /// is written. Unless a key this store trusts signed it, what the bundle says of its items
    /// is kept as its claim: its facts come in `ACTIVE`, its conversations `UNVERIFIED`, with
    /// `verified_by` `bundle:sha256:…` and the scores kept (the report's `signed_by` and
    /// `trusted` say which). Importing the same bundle again adds nothing: the report counts
    /// what was skipped.
    /// With `dry_run`, nothing is written: the report counts what the import would add.
    /// Instead of the JSON, `bundle_id` names a bundle of this store, or `share_token` a
    /// shared one (exactly one of the three).
    #[uniffi::method(default(
        bundle = None,
        target_branch = None,
        dry_run = false,
        bundle_id = None,
        share_token = None
    ))]
    pub fn import_bundle(
        &self,
        bundle: Option<String>,
        target_branch: Option<String>,
        dry_run: bool,
        bundle_id: Option<String>,
        share_token: Option<String>,
    ) -> Result<ImportReport> {
        let arguments = arguments! { bundle, target_branch, dry_run, bundle_id, share_token };
        self.run::<ops::ImportBundle>(arguments)
    }

    /// Runs the verification gate on bundle `id`'s contents: `verifier` scores each of its
    /// facts and conversations, and the bundle (returned) records `verification_status`
    /// (`Verified` when every item passed the thresholds — none is 0.7 for facts, 0.6 for
    /// conversations, 0.4 below which either fails — otherwise `Draft`), the mean score and
    /// `verified_by`. Its portable form stays as it was. Without a verifier it is
    /// `Validation` on `verifier`; when the verifier throws, nothing is recorded: a
    /// `HandoffError` comes out as thrown, anything else as `Foreign`.
    #[uniffi::method(default(
        verifier = None,
        fact_threshold = None,
        invalidate_below = None,
        conversation_threshold = None
    ))]
    pub fn verify_bundle(
        &self,
        id: String,
        verifier: Option<Arc<dyn Verifier>>,
        fact_threshold: Option<f64>,
        invalidate_below: Option<f64>,
        conversation_threshold: Option<f64>,
    ) -> Result<Bundle> {
        let arguments = arguments! {
            id,
            fact_threshold: Finite(fact_threshold),
            invalidate_below: Finite(invalidate_below),
            conversation_threshold: Finite(conversation_threshold),
        };
        let arguments: ops::VerifyBundleArgs = arguments::read_for(&self.inner, &arguments)?;
        let bundle = match verifier {
            None => ops::VerifyBundle::run_with(&self.inner, arguments, None)?,
            Some(verifier) => {
                let mut verifier = StrictVerifier::new(verifier);
                ops::VerifyBundle::run_with(&self.inner, arguments, Some(&mut verifier))
                    .map_err(|error| verifier.error(error))?
            }
        };
        bundle.try_into()
    }

    /// Task `task_id`'s whole run as one timeline, oldest first: its handoffs' events
    /// (`handoff.created`, `handoff.claimed`, ...), its plan's log (`task.step_started`, ...)
    /// and its curation log (`curation.facts_added`, ...); each agent's contribution; its key
    /// facts and conversations (verified ones only with `verified_only`); how it ended.
    /// `NotFound` when the task left nothing.
    #[uniffi::method(default(verified_only = false))]
    pub fn replay(&self, task_id: String, verified_only: bool) -> Result<TaskReplay> {
        self.run::<ops::Replay>(arguments! { task_id, verified_only })
    }

    /// Two runs side by side (an original and its rerun): their agents, decision points and
    /// key facts (only in one, in both), outcomes and timelines' lengths.
    pub fn compare(&self, task_a: String, task_b: String) -> Result<TaskComparison> {
        self.run::<ops::Compare>(arguments! { task_a, task_b })
    }
}

impl Store {
    /// Runs the core's operation `O` with `arguments`, any value that serializes to `O`'s
    /// named arguments: a record of this binding, or a method's parameters gathered with
    /// [`arguments!`]. The core reads them and reports every problem at once, by name.
    fn run<O: ops::Operation>(&self, arguments: impl Serialize) -> Result<O::Output> {
        arguments::call::<O>(&self.inner, &arguments)
    }
}

fn count(value: Option<u64>, default: usize) -> usize {
    value.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// `options` read by the core's [`ops::ConnectArgs`], as every face reads them: what it leaves
/// out keeps the core's default; a bad one (`pool_size` 0, a zero `connect_timeout`) is
/// `Validation` on it. This binding takes durations, so the core's `*_seconds` are named here
/// without the unit.
fn connect_args(options: &OpenOptions) -> Result<ops::ConnectArgs> {
    let seconds = |duration: Option<Duration>| duration.map(|d| d.as_secs_f64());
    let args = serde_json::json!({
        "synchronous": options.synchronous,
        "lock_patience_seconds": seconds(options.lock_patience),
        "read_only": options.read_only,
        "pool_size": options.pool_size,
        "connect_timeout_seconds": seconds(options.connect_timeout),
    });
    ops::ConnectArgs::read(args, &core::Limits::default()).map_err(|err| match err {
        core::Error::Validation { mut problems } => {
            for problem in &mut problems {
                if let Some(name) = problem.field.strip_suffix("_seconds") {
                    problem.field = name.to_owned();
                }
            }
            core::Error::Validation { problems }.into()
        }
        other => other.into(),
    })
}

/// What `OpenOptions` sets on a store, checked before anything is opened.
struct Settings {
    clock: Option<Arc<ManualClock>>,
    policy: Option<core::ChainPolicy>,
    limits: Option<core::Limits>,
}

impl Settings {
    /// The settings of `options`; limits no reader could read back are refused
    /// (`Limits::check`: a `max_depth` over 100).
    fn of(options: &OpenOptions) -> Result<Settings> {
        let limits = options
            .limits
            .as_ref()
            .map(|limits| {
                let default = core::Limits::default();
                let limits = core::Limits {
                    max_record_bytes: count(limits.max_record_bytes, default.max_record_bytes),
                    max_field_bytes: count(limits.max_field_bytes, default.max_field_bytes),
                    max_list_items: count(limits.max_list_items, default.max_list_items),
                    max_depth: count(limits.max_depth, default.max_depth),
                };
                limits.check().map(|()| limits)
            })
            .transpose()?;
        let policy = options.policy.as_ref().map(|policy| {
            let default = core::ChainPolicy::default();
            core::ChainPolicy {
                max_handoffs: count(policy.max_handoffs, default.max_handoffs),
                max_revisits: count(policy.max_revisits, default.max_revisits),
                collaborators: policy.collaborators.as_ref().map(|map| {
                    map.iter()
                        .map(|(from, to)| (from.clone(), to.iter().cloned().collect()))
                        .collect()
                }),
            }
        });
        Ok(Settings {
            clock: options.clock.clone(),
            policy,
            limits,
        })
    }

    /// Applies the settings to a freshly opened store, over the policy saved in it.
    fn apply(self, store: core::Store) -> core::Store {
        let mut store = store;
        if let Some(clock) = self.clock {
            store = store.with_clock(clock.core());
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

impl From<core::ChainPolicy> for ChainPolicy {
    fn from(policy: core::ChainPolicy) -> Self {
        ChainPolicy {
            max_handoffs: Some(policy.max_handoffs as u64),
            max_revisits: Some(policy.max_revisits as u64),
            collaborators: policy.collaborators.map(|map| {
                map.into_iter()
                    .map(|(from, to)| (from, to.into_iter().collect()))
                    .collect()
            }),
        }
    }
}

impl From<core::Limits> for Limits {
    fn from(limits: core::Limits) -> Self {
        Limits {
            max_record_bytes: Some(limits.max_record_bytes as u64),
            max_field_bytes: Some(limits.max_field_bytes as u64),
            max_list_items: Some(limits.max_list_items as u64),
            max_depth: Some(limits.max_depth as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The problems of opening `memory:` with `options`, as (field, rule).
    fn problems(options: OpenOptions) -> Vec<(String, String)> {
        match Store::connect("memory:".to_owned(), options) {
            Err(HandoffError::Validation { problems, .. }) => {
                problems.into_iter().map(|p| (p.field, p.rule)).collect()
            }
            other => panic!("expected Validation, got {other:?}"),
        }
    }

    #[test]
    fn bad_options_are_named_as_this_binding_names_them() {
        let bad = OpenOptions {
            pool_size: Some(0),
            connect_timeout: Some(Duration::ZERO),
            ..OpenOptions::default()
        };
        let fields: Vec<String> = problems(bad).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["pool_size", "connect_timeout"]);
    }

    #[test]
    fn given_options_reach_the_core() {
        let options = OpenOptions {
            synchronous: Some(Synchronous::Normal),
            lock_patience: Some(Duration::from_millis(250)),
            pool_size: Some(3),
            connect_timeout: Some(Duration::from_secs(2)),
            ..OpenOptions::default()
        };
        let core = connect_args(&options).map(|args| args.options());
        let Ok(core) = core else {
            panic!("refused: {core:?}")
        };
        assert_eq!(core.synchronous, core::Synchronous::Normal);
        assert_eq!(core.lock_patience, Duration::from_millis(250));
        assert_eq!(core.pool_size, 3);
        assert_eq!(core.connect_timeout, Duration::from_secs(2));
        assert!(!core.read_only);
    }
}
