//! The handoff store's operations and their arguments, under the names every face shows.

use std::time::Duration;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, ErrorKind, Problem, Result};
use crate::machine::Event;
use crate::ops::{Access, Arguments, Operation};
use crate::record::{Handoff, Kind, Metadata, NewHandoff, Reason, Status};
use crate::stats::PathStats;
use crate::store::{self, ClaimRef, ClaimSecret, DEFAULT_LEASE, EventFilter, ListFilter, Store};
use crate::validate::{self, Limits};

/// The record fields whose argument is named differently, as (record field, argument).
const ARGUMENT_NAMES: &[(&str, &str)] = &[
    ("progress_summary", "progress"),
    ("completed_steps", "completed"),
    ("pending_steps", "pending"),
    ("key_decisions", "decisions"),
    ("unresolved_errors", "errors"),
    ("modified_files", "files"),
    ("context_usage_percent", "context_pct"),
];

/// Renames a record field path (`completed_steps[2]`) to its argument (`completed[2]`).
pub fn argument_name(field: &str) -> String {
    let end = field.find(['[', '.']).unwrap_or(field.len());
    let (head, rest) = field.split_at(end);
    match ARGUMENT_NAMES.iter().find(|(record, _)| *record == head) {
        Some((_, argument)) => format!("{argument}{rest}"),
        None => field.to_owned(),
    }
}

/// An error about a record, with its fields renamed to the arguments that filled them.
fn by_argument_names(err: Error) -> Error {
    match err {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .into_iter()
                .map(|p| Problem::new(argument_name(&p.field), p.rule))
                .collect(),
        },
        other => other,
    }
}

/// [`lease`]'s verdict, as a problem of `field`.
fn lease_problems(field: &str, seconds: Option<f64>, out: &mut Vec<Problem>) {
    if let Err(err) = lease(seconds) {
        out.extend(err.problems().iter().map(|p| Problem::new(field, &p.rule)));
    }
}

/// A lease given in seconds: positive and finite; the default when absent.
fn lease(seconds: Option<f64>) -> Result<Duration> {
    match seconds {
        None => Ok(DEFAULT_LEASE),
        Some(s) => Duration::try_from_secs_f64(s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| Error::invalid("lease_seconds", "must be a positive number of seconds")),
    }
}

/// Declares [`Content`], the fields a handoff's creator fills, and the argument structs that
/// carry them beside their own (`create`'s task and agents, `checkpoint`'s task and agent), from
/// one list; serde's `flatten` would lose the argument paths of problems.
macro_rules! content_arguments {
    (
        $( $(#[$attr:meta])* $field:ident : $ty:ty, )*
    ) => {
        /// The content of a handoff or checkpoint: what the agent handing over knows.
        #[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
        pub struct Content {
            $( $(#[$attr])* pub $field: $ty, )*
        }

        /// Creates a pending handoff. With a caller-supplied `id`, creating again with the same
        /// content returns the stored record; with other content it fails with `CONFLICT`.
        #[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct CreateArgs {
            /// The task this handoff belongs to; a task's handoffs form its chain.
            pub task_id: String,
            /// The agent handing over.
            #[serde(default)]
            #[schemars(extend("x-aliases" = ["from_agent_id"]))]
            pub from_agent: Option<String>,
            /// The agent addressed; any agent may claim when absent.
            #[serde(default)]
            #[schemars(extend("x-aliases" = ["to_agent_id"]))]
            pub to_agent: Option<String>,
            /// What kind of handoff this is (default `full`).
            #[serde(default)]
            #[schemars(extend("x-aliases" = ["handoff_type"]))]
            pub kind: Option<Kind>,
            $( $(#[$attr])* pub $field: $ty, )*
        }

        /// Saves `agent`'s progress on `task_id` without changing who owns what.
        #[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct CheckpointArgs {
            /// The task.
            pub task_id: String,
            /// The agent saving its progress; it keeps the work.
            #[schemars(extend("x-aliases" = ["agent_id"]))]
            pub agent: String,
            $( $(#[$attr])* pub $field: $ty, )*
        }

        impl CreateArgs {
            /// The content, apart from the task and the agents.
            pub fn content(&self) -> Content {
                Content { $( $field: self.$field.clone(), )* }
            }
        }

        impl CheckpointArgs {
            /// The content, apart from the task and the agent.
            pub fn content(&self) -> Content {
                Content { $( $field: self.$field.clone(), )* }
            }
        }
    };
}

content_arguments! {
    /// What the successor must achieve. Never empty. Left out, the goal of the task `task_id`
    /// names (made with `create_task`), else that of the task's latest handoff.
    #[serde(default)]
    goal: Option<String>,
    /// Why the agent hands over (default `explicit`): `explicit`, `task_complete`,
    /// `context_limit_85`, `timeout_300s`, `error: <message>`, or the bare `context_limit`
    /// (with `context_pct`) and `timeout` (with `timeout_seconds`).
    #[serde(default)]
    reason: Option<String>,
    /// How full the handing-over agent's context window was, in percent.
    #[serde(default)]
    #[schemars(range(max = 100))]
    context_pct: Option<u8>,
    /// With the bare reason `timeout`: how long the agent ran, in seconds.
    #[serde(default)]
    timeout_seconds: Option<u64>,
    /// Where the work stands, in prose.
    #[serde(default)]
    progress: Option<String>,
    /// Steps already done.
    #[serde(default)]
    completed: Vec<String>,
    /// Steps still to do, in order.
    #[serde(default)]
    pending: Vec<String>,
    /// Decisions taken, and why.
    #[serde(default)]
    decisions: Vec<String>,
    /// Assumptions the work rests on.
    #[serde(default)]
    assumptions: Vec<String>,
    /// Things the successor must be careful about.
    #[serde(default)]
    warnings: Vec<String>,
    /// Errors seen and not yet fixed.
    #[serde(default)]
    errors: Vec<String>,
    /// Files changed so far.
    #[serde(default)]
    files: Vec<String>,
    /// Guidance for the successor.
    #[serde(default)]
    instructions: Option<String>,
    /// Free-form JSON object, carried along unchanged.
    #[serde(default)]
    metadata: Option<Metadata>,
    /// A caller-chosen id: creating again with the same content returns the same record.
    #[serde(default)]
    id: Option<String>,
    /// The handoff this one continues.
    #[serde(default)]
    parent_id: Option<String>,
    /// The handing-over agent's session.
    #[serde(default)]
    #[schemars(extend("x-aliases" = ["from_session_id"]))]
    session_id: Option<String>,
    /// What stops progress right now.
    #[serde(default)]
    blockers: Vec<String>,
    /// Files the work holds locks on.
    #[serde(default)]
    locked_files: Vec<String>,
    /// What matters most, first: text, or objectives by number (kept as their digits).
    #[serde(default, deserialize_with = "texts_or_numbers")]
    #[schemars(with = "Vec<TextOrNumber>")]
    #[schemars(extend("x-aliases" = ["priority_objectives"]))]
    priority_items: Vec<String>,
    /// How the successor knows it is done.
    #[serde(default)]
    success_criteria: Vec<String>,
    /// When an unclaimed handoff expires (RFC 3339).
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    expires_at: Option<DateTime<Utc>>,
    /// How many claims may lapse before the handoff fails (default 3).
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_attempts: Option<u32>,
    /// Which pending handoff `claim_next` takes first: the highest, then the oldest (default 0).
    #[serde(default)]
    priority: i32,
    /// The creator's W3C trace context (`00-<trace id>-<span id>-<flags>`): the successor's
    /// spans continue its trace.
    #[serde(default)]
    traceparent: Option<String>,
    /// The vendor part of the W3C trace context, beside `traceparent`.
    #[serde(default)]
    tracestate: Option<String>,
}

/// What stands in for a goal left out while the arguments are checked: the one taken from the
/// store later has been checked already.
const GOAL_TO_INHERIT: &str = "(the task's goal)";

/// The goal of a handoff of `task_id`: the one given, else the goal of the task `task_id` names
/// (made with `create_task`), else that of the task's latest handoff. Seed 001's calls
/// (`memory_handoff_create`, `POST /handoffs`) give none: there the task carries it.
fn goal_for(store: &Store, task_id: &str, given: Option<String>) -> Result<String> {
    if let Some(goal) = given {
        return Ok(goal);
    }
    match store.get_task(task_id) {
        Ok(task) => return Ok(task.header.goal),
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let earlier = store.list(&ListFilter {
        task_id: Some(task_id.to_owned()),
        ..ListFilter::default()
    })?;
    earlier
        .into_iter()
        .next_back()
        .map(|h| h.goal)
        .ok_or_else(|| {
            Error::invalid(
                "goal",
                "is required: the task has no goal to take (no task made with create_task, no \
             earlier handoff)",
            )
        })
}

/// An item of `priority_items` as the schema shows it: text or a whole number.
struct TextOrNumber;

impl JsonSchema for TextOrNumber {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TextOrNumber".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "integer"]})
    }
}

/// A list of texts in which whole numbers are taken as their digits: seed 001 names its
/// priority objectives by number (`priority_objectives: [1, 2]`), this store by text.
fn texts_or_numbers<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Vec<String>, D::Error> {
    struct Item(String);

    impl<'de> Deserialize<'de> for Item {
        fn deserialize<D: serde::Deserializer<'de>>(
            deserializer: D,
        ) -> std::result::Result<Item, D::Error> {
            struct Visitor;

            impl serde::de::Visitor<'_> for Visitor {
                type Value = Item;

                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a string or a whole number")
                }

                fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Item, E> {
                    Ok(Item(v.to_owned()))
                }

                fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Item, E> {
                    Ok(Item(v.to_string()))
                }

                fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Item, E> {
                    Ok(Item(v.to_string()))
                }
            }

            deserializer.deserialize_any(Visitor)
        }
    }

    let items = Vec::<Item>::deserialize(deserializer)?;
    Ok(items.into_iter().map(|Item(text)| text).collect())
}

impl Content {
    /// The core's input for `task_id`, the reason read by the core's rules: the bare
    /// `context_limit` / `timeout` take their number from `context_pct` / `timeout_seconds`.
    /// A goal left out is taken from the task in `store` (see `goal`).
    pub fn into_new(mut self, task_id: String, store: &Store) -> Result<NewHandoff> {
        let goal = goal_for(store, &task_id, self.goal.take())?;
        let (new, reason) = self.read(task_id, goal);
        reason.map(|()| new)
    }

    /// The core's input, and the reason's verdict apart: a bad reason leaves `explicit` in
    /// its place, so that the rest can still be checked.
    fn read(self, task_id: String, goal: String) -> (NewHandoff, Result<()>) {
        let (reason, verdict) = match Reason::from_input(
            self.reason.as_deref(),
            self.context_pct,
            self.timeout_seconds,
        ) {
            Ok(reason) => (reason, Ok(())),
            Err(err) => (Reason::default(), Err(err)),
        };
        let new = NewHandoff {
            id: self.id,
            task_id,
            session_id: self.session_id,
            parent_id: self.parent_id,
            kind: Kind::default(),
            reason,
            from_agent: None,
            to_agent: None,
            goal,
            progress_summary: self.progress.unwrap_or_default(),
            completed_steps: self.completed,
            pending_steps: self.pending,
            key_decisions: self.decisions,
            assumptions: self.assumptions,
            warnings: self.warnings,
            unresolved_errors: self.errors,
            blockers: self.blockers,
            modified_files: self.files,
            locked_files: self.locked_files,
            instructions: self.instructions,
            priority_items: self.priority_items,
            success_criteria: self.success_criteria,
            context_usage_percent: self.context_pct,
            metadata: self.metadata.unwrap_or_default(),
            protocol: None,
            expires_at: self.expires_at,
            max_attempts: self.max_attempts,
            priority: self.priority,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
        };
        (new, verdict)
    }
}

/// Every problem of `new` as a record under `limits`, after the reason's, by argument names.
fn record_problems(new: NewHandoff, reason: Result<()>, limits: &Limits) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Err(err) = reason {
        problems.extend(by_argument_names(err).problems().iter().cloned());
    }
    let id = new.id.clone().unwrap_or_else(|| "unsaved".to_owned());
    // Whether `expires_at` is still ahead is the store's to judge, by its own clock (which may
    // be a manual one) at the moment it creates: here the record is dated as early as can be.
    if let Err(err) = new
        .into_record(id, DateTime::<Utc>::MIN_UTC)
        .validate(limits)
    {
        for p in by_argument_names(err).problems() {
            if !problems.iter().any(|known| known.field == p.field) {
                problems.push(p.clone());
            }
        }
    }
    problems
}

impl CreateArgs {
    /// The core's input; a goal left out is taken from the task in `store` (see `goal`).
    pub fn into_new(self, store: &Store) -> Result<NewHandoff> {
        let goal = goal_for(store, &self.task_id, self.goal.clone())?;
        let (new, reason) = self.read(goal);
        reason.map(|()| new)
    }

    fn read(self, goal: String) -> (NewHandoff, Result<()>) {
        let (mut new, reason) = self.content().read(self.task_id, goal);
        new.from_agent = self.from_agent;
        new.to_agent = self.to_agent;
        new.kind = self.kind.unwrap_or_default();
        (new, reason)
    }
}

impl Arguments for CreateArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let goal = self
            .goal
            .clone()
            .unwrap_or_else(|| GOAL_TO_INHERIT.to_owned());
        let (new, reason) = self.clone().read(goal);
        record_problems(new, reason, limits)
    }
}

/// The `create` operation.
pub struct Create;

impl Operation for Create {
    const NAME: &'static str = "create";
    const ACCESS: Access = Access::Creates;
    const POSITIONAL: &'static [&'static str] = &["task_id", "goal"];
    type Args = CreateArgs;
    type Output = Handoff;

    fn run(store: &Store, args: CreateArgs) -> Result<Handoff> {
        store
            .create(args.into_new(store)?)
            .map_err(by_argument_names)
    }
}

/// Creates several handoffs in one transaction: all of them, or none when one is refused.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateManyArgs {
    /// The handoffs, each with `create`'s arguments.
    pub items: Vec<CreateArgs>,
}

/// An error about item `i` of `create_many`, its problems named under `items[i]`.
fn in_item(i: usize, err: Error) -> Error {
    match err {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .into_iter()
                .map(|p| Problem::new(format!("items[{i}].{}", p.field), p.rule))
                .collect(),
        },
        other => other,
    }
}

impl Arguments for CreateManyArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (i, item) in self.items.iter().enumerate() {
            for p in item.problems(limits) {
                problems.push(Problem::new(format!("items[{i}].{}", p.field), p.rule));
            }
        }
        problems
    }
}

/// The `create_many` operation.
pub struct CreateMany;

impl Operation for CreateMany {
    const NAME: &'static str = "create_many";
    const ACCESS: Access = Access::Creates;
    const POSITIONAL: &'static [&'static str] = &["items"];
    type Args = CreateManyArgs;
    type Output = Vec<Handoff>;

    fn run(store: &Store, args: CreateManyArgs) -> Result<Vec<Handoff>> {
        let news = args
            .items
            .into_iter()
            .enumerate()
            .map(|(i, item)| item.into_new(store).map_err(|e| in_item(i, e)))
            .collect::<Result<Vec<_>>>()?;
        store.create_many(news).map_err(by_argument_names)
    }
}

/// The handoff with this id; `NOT_FOUND` if there is none.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The handoff's id.
    #[schemars(extend("x-aliases" = ["handoff_id", "handover_id"]))]
    pub id: String,
}

impl Arguments for GetArgs {}

/// The `get` operation.
pub struct Get;

impl Operation for Get {
    const NAME: &'static str = "get";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = GetArgs;
    type Output = Handoff;

    fn run(store: &Store, args: GetArgs) -> Result<Handoff> {
        store.get(&args.id)
    }
}

/// Handoffs matching the filter, oldest first.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only records in this status (`accepted` reads as `claimed`).
    #[serde(default)]
    pub status: Option<Status>,
    /// Only records of this task.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Only records addressed to this agent.
    #[serde(default)]
    pub to_agent: Option<String>,
    /// At most this many records.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only records of this kind.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Only records after the one with this id (the last of the previous page).
    #[serde(default)]
    pub after: Option<String>,
    /// Only pending records: the same as `status` `pending`, so not with a `status`.
    #[serde(default)]
    pub pending_only: bool,
}

impl Arguments for ListArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        // Seed 000's filter (`masc_handover_list`) says what `status` says: one of them.
        match (self.pending_only, self.status) {
            (true, Some(_)) => vec![Problem::new(
                "pending_only",
                "says what status says: give pending_only or status, not both",
            )],
            _ => Vec::new(),
        }
    }
}

impl From<ListArgs> for ListFilter {
    fn from(args: ListArgs) -> ListFilter {
        ListFilter {
            status: args.status.or(args.pending_only.then_some(Status::Pending)),
            task_id: args.task_id,
            to_agent: args.to_agent,
            kind: args.kind,
            limit: args.limit,
            after: args.after,
        }
    }
}

/// The `list` operation.
pub struct List;

impl Operation for List {
    const NAME: &'static str = "list";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &["status", "task_id", "to_agent", "limit"];
    type Args = ListArgs;
    type Output = Vec<Handoff>;

    fn run(store: &Store, args: ListArgs) -> Result<Vec<Handoff>> {
        store.list(&args.into())
    }
}

/// Claims the handoff `id` for `agent`. `ALREADY_CLAIMED` while another claim is live;
/// `INVALID_TRANSITION` when it is finished or addressed to another agent.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimArgs {
    /// The handoff to claim.
    #[schemars(extend("x-aliases" = ["handoff_id", "handover_id"]))]
    pub id: String,
    /// The agent taking it.
    #[schemars(extend("x-aliases" = ["agent_id", "agent_name"]))]
    pub agent: String,
    /// How long the claim lives without a heartbeat (default 300).
    #[serde(default)]
    pub lease_seconds: Option<f64>,
}

impl Arguments for ClaimArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        lease_problems("lease_seconds", self.lease_seconds, &mut problems);
        problems
    }
}

/// The `claim` operation.
pub struct Claim;

impl Operation for Claim {
    const NAME: &'static str = "claim";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["id", "agent", "lease_seconds"];
    type Args = ClaimArgs;
    type Output = store::Claim;

    fn run(store: &Store, args: ClaimArgs) -> Result<store::Claim> {
        store.claim(&args.id, &args.agent, lease(args.lease_seconds)?)
    }
}

/// Claims the next pending handoff `agent` may take (addressed to it or to anyone), the
/// highest priority first, then the oldest; nothing when there is none, after waiting up to
/// `wait_seconds` for some to arrive.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimNextArgs {
    /// The agent taking work.
    #[schemars(extend("x-aliases" = ["agent_id", "agent_name"]))]
    pub agent: String,
    /// Only work of this task.
    #[serde(default)]
    pub task_id: Option<String>,
    /// How long the claim lives without a heartbeat (default 300).
    #[serde(default)]
    pub lease_seconds: Option<f64>,
    /// How long to wait for work when there is none (default 0: answer at once). The worker
    /// sleeps until work arrives: woken by PostgreSQL at once, by a short poll elsewhere.
    #[serde(default)]
    pub wait_seconds: Option<f64>,
}

impl ClaimNextArgs {
    fn wait(&self) -> Option<Duration> {
        match self.wait_seconds {
            None => Some(Duration::ZERO),
            Some(s) => Duration::try_from_secs_f64(s).ok(),
        }
    }
}

impl Arguments for ClaimNextArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        lease_problems("lease_seconds", self.lease_seconds, &mut problems);
        if self.wait().is_none() {
            problems.push(Problem::new(
                "wait_seconds",
                "must be a non-negative number of seconds",
            ));
        }
        problems
    }
}

/// The `claim_next` operation.
pub struct ClaimNext;

impl Operation for ClaimNext {
    const NAME: &'static str = "claim_next";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["agent", "task_id", "lease_seconds"];
    type Args = ClaimNextArgs;
    type Output = Option<store::Claim>;

    fn run(store: &Store, args: ClaimNextArgs) -> Result<Option<store::Claim>> {
        let lease = lease(args.lease_seconds)?;
        let wait = args.wait().ok_or_else(|| {
            Error::invalid("wait_seconds", "must be a non-negative number of seconds")
        })?;
        store.claim_next_wait(&args.agent, args.task_id.as_deref(), lease, wait)
    }
}

/// A claim as a caller hands it back: the claimed handoff's id, the fencing token, the secret
/// and the lease length. Only these; never the record.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ClaimRef")]
pub struct ClaimInput {
    /// The claimed handoff's id.
    pub handoff_id: String,
    /// The claim's fencing token.
    pub token: u64,
    /// The claim's secret (`hcs_` and 64 hex digits); `claim_secret`, as a claim returns it,
    /// is read too.
    #[serde(alias = "claim_secret")]
    #[schemars(extend("x-aliases" = ["claim_secret"]))]
    pub secret: String,
    /// The lease length in seconds, renewed by each heartbeat (default 300).
    #[serde(default)]
    pub lease_seconds: Option<f64>,
}

impl ClaimInput {
    pub(crate) fn problems(&self, out: &mut Vec<Problem>) {
        if let Err(err) = ClaimSecret::parse(&self.secret) {
            out.extend(
                err.problems()
                    .iter()
                    .map(|p| Problem::new("claim.secret", &p.rule)),
            );
        }
        lease_problems("claim.lease_seconds", self.lease_seconds, out);
    }

    /// The core's claim reference.
    pub fn into_ref(self) -> Result<ClaimRef> {
        Ok(ClaimRef {
            handoff_id: self.handoff_id,
            token: self.token,
            secret: ClaimSecret::parse(&self.secret)?,
            lease: lease(self.lease_seconds)
                .map_err(|_| Error::invalid("claim.lease_seconds", "must be positive"))?,
        })
    }
}

/// Declares an operation that settles a claim: its argument struct (the claim plus `$extra`)
/// and its `Operation` impl.
macro_rules! claim_operation {
    (
        $(#[$doc:meta])*
        $op:ident, $args:ident, $name:literal, [$($positional:literal),*],
        { $($(#[$field_doc:meta])* $field:ident : $ty:ty $(= $default:ident)?),* },
        |$store:ident, $claim:ident, $a:ident| $body:expr
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $args {
            /// The claim, as `claim` or `claim_next` returned it.
            pub claim: ClaimInput,
            $($(#[$field_doc])* $(#[serde($default)])? pub $field: $ty,)*
        }

        impl Arguments for $args {
            fn problems(&self, _: &Limits) -> Vec<Problem> {
                let mut problems = Vec::new();
                self.claim.problems(&mut problems);
                problems
            }
        }

        #[doc = concat!("The `", $name, "` operation.")]
        pub struct $op;

        impl Operation for $op {
            const NAME: &'static str = $name;
            const ACCESS: Access = Access::Writes;
            const POSITIONAL: &'static [&'static str] = &["claim" $(, $positional)*];
            type Args = $args;
            type Output = Handoff;

            fn run($store: &Store, $a: $args) -> Result<Handoff> {
                let $claim = $a.claim.clone().into_ref()?;
                $body
            }
        }
    };
}

claim_operation!(
    /// Renews the claim's lease, reporting progress if given. `LEASE_LOST` once the claim
    /// has lapsed or moved on.
    Heartbeat, HeartbeatArgs, "heartbeat", ["progress"],
    {
        /// How the work is going: a small JSON value (at most 4 KB), kept on the record until
        /// the next claim and shown to operators; left out, the last one stays.
        progress: Option<serde_json::Value> = default
    },
    |store, claim, args| store.heartbeat_with(claim, args.progress)
);

claim_operation!(
    /// Gives the handoff back to the queue, with why.
    Release, ReleaseArgs, "release", ["reason"],
    {
        /// Why the holder gives it back.
        reason: String
    },
    |store, claim, args| store.release(claim, &args.reason)
);

claim_operation!(
    /// Reports that the work failed: pending again with one more attempt counted, or
    /// `failed` (the error its outcome) after the last of its `max_attempts`.
    Fail, FailArgs, "fail", ["error"],
    {
        /// What went wrong.
        error: String
    },
    |store, claim, args| store.fail(claim, &args.error)
);

claim_operation!(
    /// Finishes the handoff, with what came of it.
    Complete, CompleteArgs, "complete", ["outcome"],
    {
        /// What came of the work.
        outcome: Option<String> = default,
        /// The model tokens the work took, if you count them: a task step adds them to its
        /// task's metrics.
        tokens_used: Option<u64> = default
    },
    |store, claim, args| {
        let outcome = args.outcome.as_deref().unwrap_or_default();
        store.complete_counting(claim, outcome, args.tokens_used)
    }
);

claim_operation!(
    /// Withdraws the handoff as its holder.
    CancelClaim, CancelClaimArgs, "cancel_claim", ["reason"],
    {
        /// Why.
        reason: Option<String> = default
    },
    |store, claim, args| store.cancel_claim(claim, args.reason.as_deref())
);

/// Refuses the handoff as `agent`, its addressee (or, for an open handoff, its holder).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectArgs {
    /// The handoff.
    pub id: String,
    /// The agent refusing it.
    pub agent: String,
    /// Why.
    pub reason: String,
}

impl Arguments for RejectArgs {}

/// The `reject` operation.
pub struct Reject;

impl Operation for Reject {
    const NAME: &'static str = "reject";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["id", "agent", "reason"];
    type Args = RejectArgs;
    type Output = Handoff;

    fn run(store: &Store, args: RejectArgs) -> Result<Handoff> {
        store.reject(&args.id, &args.agent, &args.reason)
    }
}

/// Withdraws a pending or claimed handoff, as `by`: its creator, or anyone when it has none.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    /// The handoff.
    pub id: String,
    /// Who withdraws it.
    pub by: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Arguments for CancelArgs {}

/// The `cancel` operation.
pub struct Cancel;

impl Operation for Cancel {
    const NAME: &'static str = "cancel";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["id", "by", "reason"];
    type Args = CancelArgs;
    type Output = Handoff;

    fn run(store: &Store, args: CancelArgs) -> Result<Handoff> {
        store.cancel(&args.id, &args.by, args.reason.as_deref())
    }
}

/// Puts a failed, rejected or cancelled handoff back in the queue, as the operator `by`: its
/// attempts count afresh, and its log keeps the earlier ones.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryArgs {
    /// The handoff.
    pub id: String,
    /// Who retries it.
    pub by: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Arguments for RetryArgs {}

/// The `retry` operation.
pub struct Retry;

impl Operation for Retry {
    const NAME: &'static str = "retry";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["id", "by", "reason"];
    type Args = RetryArgs;
    type Output = Handoff;

    fn run(store: &Store, args: RetryArgs) -> Result<Handoff> {
        store.retry(&args.id, &args.by, args.reason.as_deref())
    }
}

/// Takes a live claim away from its holder, as the operator `by`: pending again, one more
/// attempt counted, the holder's token no longer works.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeClaimArgs {
    /// The handoff.
    pub id: String,
    /// Who revokes the claim.
    pub by: String,
    /// Why.
    pub reason: String,
}

impl Arguments for RevokeClaimArgs {}

/// The `revoke_claim` operation.
pub struct RevokeClaim;

impl Operation for RevokeClaim {
    const NAME: &'static str = "revoke_claim";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["id", "by", "reason"];
    type Args = RevokeClaimArgs;
    type Output = Handoff;

    fn run(store: &Store, args: RevokeClaimArgs) -> Result<Handoff> {
        store.revoke_claim(&args.id, &args.by, &args.reason)
    }
}

/// Changes the priority of a pending or claimed handoff: `claim_next` takes the highest first.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPriorityArgs {
    /// The handoff.
    pub id: String,
    /// The new priority (higher is taken sooner; the default is 0).
    pub priority: i32,
    /// Who changes it.
    pub by: String,
}

impl Arguments for SetPriorityArgs {}

/// The `set_priority` operation.
pub struct SetPriority;

impl Operation for SetPriority {
    const NAME: &'static str = "set_priority";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["id", "priority", "by"];
    type Args = SetPriorityArgs;
    type Output = Handoff;

    fn run(store: &Store, args: SetPriorityArgs) -> Result<Handoff> {
        store.set_priority(&args.id, args.priority, &args.by)
    }
}

/// The event log, oldest first: all of it, one handoff's or one task's, a page at a time.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsArgs {
    /// Only this handoff's events (`id` is accepted too).
    #[serde(default, alias = "id")]
    #[schemars(extend("x-aliases" = ["id"]))]
    pub handoff_id: Option<String>,
    /// Only the events of this task's handoffs.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Only events after this cursor: the `seq` of the last event already read.
    #[serde(default)]
    pub after: Option<u64>,
    /// At most this many events (a page).
    #[serde(default)]
    pub limit: Option<usize>,
}

impl Arguments for EventsArgs {}

/// The `events` operation.
pub struct Events;

impl Operation for Events {
    const NAME: &'static str = "events";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &["handoff_id", "task_id", "after", "limit"];
    type Args = EventsArgs;
    type Output = Vec<Event>;

    fn run(store: &Store, args: EventsArgs) -> Result<Vec<Event>> {
        store.events_page(&EventFilter {
            handoff_id: args.handoff_id,
            task_id: args.task_id,
            after: args.after,
            limit: args.limit,
        })
    }
}

/// The task's chain: who handed to whom, in order.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChainArgs {
    /// The task.
    pub task_id: String,
}

impl Arguments for ChainArgs {}

/// The `chain` operation.
pub struct Chain;

impl Operation for Chain {
    const NAME: &'static str = "chain";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &["task_id"];
    type Args = ChainArgs;
    type Output = crate::chain::Chain;

    fn run(store: &Store, args: ChainArgs) -> Result<crate::chain::Chain> {
        store.chain(&args.task_id)
    }
}

impl Arguments for CheckpointArgs {
    fn problems(&self, limits: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Err(err) = validate::agent("agent", &self.agent) {
            problems.extend(err.problems().iter().cloned());
        }
        let goal = self
            .goal
            .clone()
            .unwrap_or_else(|| GOAL_TO_INHERIT.to_owned());
        let (mut new, reason) = self.content().read(self.task_id.clone(), goal);
        new.from_agent = Some(self.agent.clone());
        for p in record_problems(new, reason, limits) {
            if !problems.iter().any(|known| known.field == p.field) {
                problems.push(p);
            }
        }
        problems
    }
}

/// The `checkpoint` operation.
pub struct Checkpoint;

impl Operation for Checkpoint {
    const NAME: &'static str = "checkpoint";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &["task_id", "agent"];
    type Args = CheckpointArgs;
    type Output = Handoff;

    fn run(store: &Store, args: CheckpointArgs) -> Result<Handoff> {
        let new = args.content().into_new(args.task_id.clone(), store)?;
        store
            .checkpoint(&args.task_id, &args.agent, new)
            .map_err(by_argument_names)
    }
}

/// Ids of tasks in progress whose last sign of life (claim, heartbeat, checkpoint) is older
/// than `older_than_seconds`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StalledArgs {
    /// How long without a sign of life makes a task stalled.
    pub older_than_seconds: f64,
}

impl StalledArgs {
    fn older_than(&self) -> Option<Duration> {
        Duration::try_from_secs_f64(self.older_than_seconds).ok()
    }
}

impl Arguments for StalledArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        match self.older_than() {
            Some(_) => Vec::new(),
            None => vec![Problem::new(
                "older_than_seconds",
                "must be a non-negative number of seconds",
            )],
        }
    }
}

/// The `stalled` operation.
pub struct Stalled;

impl Operation for Stalled {
    const NAME: &'static str = "stalled";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &["older_than_seconds"];
    type Args = StalledArgs;
    type Output = Vec<String>;

    fn run(store: &Store, args: StalledArgs) -> Result<Vec<String>> {
        let older_than = args.older_than().ok_or_else(|| {
            Error::invalid(
                "older_than_seconds",
                "must be a non-negative number of seconds",
            )
        })?;
        store.stalled(older_than)
    }
}

/// Per from→to pair of agents: totals, outcomes and median times to claim and complete.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsArgs {}

impl Arguments for StatsArgs {}

/// The `stats` operation.
pub struct Stats;

impl Operation for Stats {
    const NAME: &'static str = "stats";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = StatsArgs;
    type Output = Vec<PathStats>;

    fn run(store: &Store, _: StatsArgs) -> Result<Vec<PathStats>> {
        store.stats()
    }
}

/// The queue at a glance: how many handoffs are in each status, per addressee (checkpoints
/// left out), in status then agent order.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueCountsArgs {}

impl Arguments for QueueCountsArgs {}

/// The `queue_counts` operation.
pub struct QueueCounts;

impl Operation for QueueCounts {
    const NAME: &'static str = "queue_counts";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = QueueCountsArgs;
    type Output = Vec<crate::store::QueueCount>;

    fn run(store: &Store, _: QueueCountsArgs) -> Result<Vec<crate::store::QueueCount>> {
        store.queue_counts()
    }
}

/// What the store can do beyond what every store does: durable, shared by processes or by
/// machines, backups, waking waiting workers.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesArgs {}

impl Arguments for CapabilitiesArgs {}

/// The `capabilities` operation.
pub struct Capabilities;

impl Operation for Capabilities {
    const NAME: &'static str = "capabilities";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = CapabilitiesArgs;
    type Output = store::Capabilities;

    fn run(store: &Store, _: CapabilitiesArgs) -> Result<store::Capabilities> {
        Ok(store.capabilities())
    }
}

/// Applies every lapse that is due (leases, expiries) now; returns how many records changed.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReapArgs {}

impl Arguments for ReapArgs {}

/// The `reap` operation.
pub struct Reap;

impl Operation for Reap {
    const NAME: &'static str = "reap";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = ReapArgs;
    type Output = usize;

    fn run(store: &Store, _: ReapArgs) -> Result<usize> {
        store.reap()
    }
}

/// Looks through the whole store for damage (files deleted, emptied or edited by hand, links
/// planted, a bad disk) and reports each piece by name. With `repair`, a files store moves what
/// is damaged into its `quarantine/` folder and mends what referred to it; a database store
/// reports only (restore a backup).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckArgs {
    /// Move what is damaged aside and mend what referred to it (a files store).
    #[serde(default)]
    pub repair: bool,
}

impl Arguments for CheckArgs {}

/// The `check` operation.
pub struct Check;

impl Operation for Check {
    const NAME: &'static str = "check";
    const ACCESS: Access = Access::Writes;
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = CheckArgs;
    type Output = store::CheckReport;

    fn run(store: &Store, args: CheckArgs) -> Result<store::CheckReport> {
        store.check(args.repair)
    }
}
