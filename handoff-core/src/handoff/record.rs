//! The handover record (the "DNA"): everything the next agent needs to continue, and the rules
//! it obeys, all checked at once on create and on import.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::status::{Kind, Status};
use crate::error::{Error, Result};
use crate::protocol;
use crate::validate::{self, Collector, Limits, deeper_than, json_size, list, text};

/// The version of the record's JSON form. Records carrying another version are refused.
pub const SCHEMA_VERSION: u32 = 1;

/// How many times a claim may lapse before the handoff fails, unless the creator says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// A free-form JSON object carried along with a handoff.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// A handover record: the work, what is known about it, and who holds it.
///
/// The fields up to `max_attempts` are the content, fixed at creation. The fields from `status`
/// on are managed by the store through the state machine and change with every transition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[serde(deny_unknown_fields)]
#[schemars(title = "Handoff", description = "A handoff-core handover record")]
pub struct Handoff {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Time-ordered id (UUIDv7) or one supplied by the creator as an idempotency key.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._:@-]{1,128}$"))]
    pub id: String,
    /// The task this handoff belongs to; a task's handoffs form its chain.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._:@-]{1,128}$"))]
    pub task_id: String,
    /// The session the handing-over agent ran in.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The handoff this one continues.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// What kind of handoff this is.
    #[serde(default)]
    pub kind: Kind,
    /// Why the previous agent handed over.
    #[serde(default)]
    pub reason: Reason,
    /// The agent handing over.
    #[serde(default)]
    pub from_agent: Option<String>,
    /// The agent addressed; `None` lets any agent claim it.
    #[serde(default)]
    pub to_agent: Option<String>,
    /// What the successor must achieve. Never empty.
    #[schemars(length(min = 1))]
    pub goal: String,
    /// Where the work stands, in prose.
    #[serde(default)]
    pub progress_summary: String,
    /// Steps already done.
    #[serde(default)]
    pub completed_steps: Vec<String>,
    /// Steps still to do, in order.
    #[serde(default)]
    pub pending_steps: Vec<String>,
    /// Decisions taken, and why, so the successor does not reopen them.
    #[serde(default)]
    pub key_decisions: Vec<String>,
    /// Assumptions the work rests on.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// Things the successor must be careful about.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Errors seen and not yet fixed.
    #[serde(default)]
    pub unresolved_errors: Vec<String>,
    /// What stops progress right now.
    #[serde(default)]
    pub blockers: Vec<String>,
    /// Files changed so far.
    #[serde(default)]
    pub modified_files: Vec<String>,
    /// Files the work holds locks on.
    #[serde(default)]
    pub locked_files: Vec<String>,
    /// Guidance for the successor.
    #[serde(default)]
    pub instructions: Option<String>,
    /// What matters most, first.
    #[serde(default)]
    pub priority_items: Vec<String>,
    /// How the successor knows it is done.
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// How full the previous agent's context window was, in percent (0..=100).
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub context_usage_percent: Option<u8>,
    /// Free-form JSON, preserved unchanged.
    #[serde(default)]
    pub metadata: Metadata,
    /// A manager/worker protocol message's body (docs/design.md §8), with the seed's field names; only
    /// the protocol's calls (`initialize`, `report`, `decide`, ...) write it.
    // Boxed: inline, it doubled the size of every record, most of which carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Box<crate::protocol::ProtocolBody>>,
    /// The creator's W3C trace context (`00-<trace id>-<span id>-<flags>`): the successor
    /// starts its span under it, so a chain of agents is one trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"))]
    pub traceparent: Option<String>,
    /// The vendor part of the creator's W3C trace context, carried with `traceparent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    /// When the handoff was created.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: DateTime<Utc>,
    /// When an unclaimed handoff expires; `None` is never.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub expires_at: Option<DateTime<Utc>>,
    /// How many claims may lapse before the handoff fails.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,

    /// Where the handoff is in its lifecycle.
    #[serde(default)]
    pub status: Status,
    /// The agent holding (or that last held) the claim.
    #[serde(default)]
    pub claimed_by: Option<String>,
    /// The fencing token of the latest claim; it grows with every claim.
    #[serde(default)]
    pub claim_token: Option<u64>,
    /// When the current claim lapses unless renewed.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub lease_until: Option<DateTime<Utc>>,
    /// When the holder last claimed or heartbeated.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub heartbeat_at: Option<DateTime<Utc>>,
    /// How many claims ended without completion (released or lapsed).
    #[serde(default)]
    pub attempts: u32,
    /// When the handoff reached a terminal status.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub completed_at: Option<DateTime<Utc>>,
    /// The completing agent's result, or why the handoff ended otherwise.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Which pending handoff `claim_next` takes first: the highest, then the oldest. Set at
    /// create, changed by `set_priority`.
    #[serde(default)]
    pub priority: i32,
    /// What the holder last reported with a heartbeat (a small JSON value), until the next
    /// claim.
    #[serde(default)]
    pub progress: Option<serde_json::Value>,
}

/// How [`Handoff::to_json`] ends for a record whose lifecycle is a new one's (the lifecycle
/// fields come last; a test keeps this in step with the struct).
#[cfg(any(feature = "sqlite", feature = "postgres", test))]
const NEW_LIFECYCLE_TAIL: &str = r#","status":"pending","claimed_by":null,"claim_token":null,"lease_until":null,"heartbeat_at":null,"attempts":0,"completed_at":null,"outcome":null,"priority":0,"progress":null}"#;

fn default_max_attempts() -> u32 {
    DEFAULT_MAX_ATTEMPTS
}

impl Handoff {
    /// This record as its create left it: the same content, pending, never claimed. A record's
    /// content never changes after its create, so this is what its `created` event stands for.
    pub fn as_created(&self) -> Handoff {
        let mut created = self.clone();
        created.replace_lifecycle(Lifecycle::default());
        created
    }

    /// Parses and validates a record from its JSON form, with the default [`Limits`] except
    /// for nesting, which may reach [`MAX_DEPTH`](crate::MAX_DEPTH): whatever any store may
    /// have written, this reads back.
    ///
    /// Size and nesting are checked before the text is parsed; every broken rule is reported.
    pub fn from_json(json: &str) -> Result<Handoff> {
        let limits = Limits {
            max_depth: crate::validate::MAX_DEPTH,
            ..Limits::default()
        };
        Handoff::from_json_with(json, &limits)
    }

    /// Parses and validates a record from its JSON form under the given limits.
    pub fn from_json_with(json: &str, limits: &Limits) -> Result<Handoff> {
        let record: Handoff =
            validate::parse_json("record", validate::FieldNames::Bare, json, limits)?;
        record.validate(limits)?;
        Ok(record)
    }

    /// The canonical JSON form.
    pub fn to_json(&self) -> String {
        // A record is plain data with string keys: serialising it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The JSON a database keeps beside its lifecycle columns: [`Handoff::to_json`] without
    /// the lifecycle fields while they are a new record's. The columns hold those fields and
    /// override whatever a body says (reading fills in the defaults), so they were dead bytes
    /// in every stored record: about 135 of them, enough that two ~2 KB records did not share
    /// a 4 KB SQLite page and every create wrote a page of its own.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn stored_body(&self) -> String {
        let mut json = self.to_json();
        if json.ends_with(NEW_LIFECYCLE_TAIL) {
            json.truncate(json.len() - NEW_LIFECYCLE_TAIL.len());
            json.push('}');
        }
        json
    }

    /// Checks every rule of the record, reporting all broken ones at once.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        check_record(self, limits)
    }

    /// Whether two records carry the same content: everything the creator wrote, ignoring the
    /// store-managed lifecycle fields and the creation time.
    pub fn same_content(&self, other: &Handoff) -> bool {
        let mut a = self.clone();
        a.reset_lifecycle(other.created_at);
        let mut b = other.clone();
        b.reset_lifecycle(other.created_at);
        a == b
    }

    fn reset_lifecycle(&mut self, created_at: DateTime<Utc>) {
        self.created_at = created_at;
        self.replace_lifecycle(Lifecycle::default());
    }

    /// The store-managed fields, copied.
    pub fn lifecycle(&self) -> Lifecycle {
        Lifecycle {
            status: self.status,
            claimed_by: self.claimed_by.clone(),
            claim_token: self.claim_token,
            lease_until: self.lease_until,
            heartbeat_at: self.heartbeat_at,
            attempts: self.attempts,
            completed_at: self.completed_at,
            outcome: self.outcome.clone(),
            priority: self.priority,
            progress: self.progress.clone(),
        }
    }

    /// Puts `lifecycle` in place of the store-managed fields and returns the old ones.
    pub fn replace_lifecycle(&mut self, lifecycle: Lifecycle) -> Lifecycle {
        Lifecycle {
            status: std::mem::replace(&mut self.status, lifecycle.status),
            claimed_by: std::mem::replace(&mut self.claimed_by, lifecycle.claimed_by),
            claim_token: std::mem::replace(&mut self.claim_token, lifecycle.claim_token),
            lease_until: std::mem::replace(&mut self.lease_until, lifecycle.lease_until),
            heartbeat_at: std::mem::replace(&mut self.heartbeat_at, lifecycle.heartbeat_at),
            attempts: std::mem::replace(&mut self.attempts, lifecycle.attempts),
            completed_at: std::mem::replace(&mut self.completed_at, lifecycle.completed_at),
            outcome: std::mem::replace(&mut self.outcome, lifecycle.outcome),
            priority: std::mem::replace(&mut self.priority, lifecycle.priority),
            progress: std::mem::replace(&mut self.progress, lifecycle.progress),
        }
    }

    /// The agent this hop leads to: the addressee, or whoever claimed an open handoff.
    pub fn successor(&self) -> Option<&str> {
        self.to_agent.as_deref().or(self.claimed_by.as_deref())
    }
}

/// The fields of a [`Handoff`] that the store manages: all that a transition changes, and all
/// that a backend's update writes. The default is a new, pending record's.
#[derive(Clone, Debug, Default, PartialEq)]
#[allow(missing_docs)] // Each field is documented on `Handoff`.
pub struct Lifecycle {
    pub status: Status,
    pub claimed_by: Option<String>,
    pub claim_token: Option<u64>,
    pub lease_until: Option<DateTime<Utc>>,
    pub heartbeat_at: Option<DateTime<Utc>>,
    pub attempts: u32,
    pub completed_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
    pub priority: i32,
    pub progress: Option<serde_json::Value>,
}

/// What a creator supplies for a new handoff; the store adds the id, times and lifecycle.
///
/// ```
/// use handoff_core::{NewHandoff, Reason};
///
/// let new = NewHandoff::new("task-42", "Ship the parser")
///     .from_agent("claude")
///     .to_agent("gemini")
///     .reason(Reason::ContextLimit { percent: 85 })
///     .completed(["tokenizer"])
///     .pending(["error recovery", "tests"]);
/// assert_eq!(new.to_agent.as_deref(), Some("gemini"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)] // Each field is documented on `Handoff`.
pub struct NewHandoff {
    /// A caller-chosen id: creating twice with the same id and content returns the same record.
    #[serde(default)]
    pub id: Option<String>,
    pub task_id: String,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub kind: Kind,
    #[serde(default)]
    pub reason: Reason,
    #[serde(default)]
    pub from_agent: Option<String>,
    #[serde(default)]
    pub to_agent: Option<String>,
    pub goal: String,
    #[serde(default)]
    pub progress_summary: String,
    #[serde(default)]
    pub completed_steps: Vec<String>,
    #[serde(default)]
    pub pending_steps: Vec<String>,
    #[serde(default)]
    pub key_decisions: Vec<String>,
    #[serde(default)]
    pub assumptions: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default)]
    pub unresolved_errors: Vec<String>,
    #[serde(default)]
    pub blockers: Vec<String>,
    #[serde(default)]
    pub modified_files: Vec<String>,
    #[serde(default)]
    pub locked_files: Vec<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub priority_items: Vec<String>,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub context_usage_percent: Option<u8>,
    #[serde(default)]
    pub metadata: Metadata,
    /// A protocol message's body: the protocol's calls write it; a record made by hand with
    /// one (or imported) is checked like theirs but answers no run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Box<crate::protocol::ProtocolBody>>,
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Defaults to [`DEFAULT_MAX_ATTEMPTS`].
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Which pending handoff `claim_next` takes first: the highest, then the oldest (0 when
    /// not given).
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"))]
    pub traceparent: Option<String>,
    #[serde(default)]
    pub tracestate: Option<String>,
}

fn strings<I, S>(items: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    items.into_iter().map(Into::into).collect()
}

impl NewHandoff {
    /// A new handoff for `task_id` with `goal`, everything else empty.
    pub fn new(task_id: impl Into<String>, goal: impl Into<String>) -> Self {
        NewHandoff {
            task_id: task_id.into(),
            goal: goal.into(),
            ..NewHandoff::default()
        }
    }

    /// Sets the idempotency id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
    /// Sets the agent handing over.
    pub fn from_agent(mut self, agent: impl Into<String>) -> Self {
        self.from_agent = Some(agent.into());
        self
    }
    /// Addresses the handoff to one agent.
    pub fn to_agent(mut self, agent: impl Into<String>) -> Self {
        self.to_agent = Some(agent.into());
        self
    }
    /// Sets the handoff this one continues.
    pub fn parent_id(mut self, parent: impl Into<String>) -> Self {
        self.parent_id = Some(parent.into());
        self
    }
    /// Sets the session.
    pub fn session_id(mut self, session: impl Into<String>) -> Self {
        self.session_id = Some(session.into());
        self
    }
    /// Sets the kind.
    pub fn kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }
    /// Sets the reason.
    pub fn reason(mut self, reason: Reason) -> Self {
        self.reason = reason;
        self
    }
    /// Sets the progress summary.
    pub fn progress(mut self, summary: impl Into<String>) -> Self {
        self.progress_summary = summary.into();
        self
    }
    /// Sets the completed steps.
    pub fn completed<I: IntoIterator<Item = S>, S: Into<String>>(mut self, steps: I) -> Self {
        self.completed_steps = strings(steps);
        self
    }
    /// Sets the pending steps.
    pub fn pending<I: IntoIterator<Item = S>, S: Into<String>>(mut self, steps: I) -> Self {
        self.pending_steps = strings(steps);
        self
    }
    /// Sets the key decisions.
    pub fn decisions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, items: I) -> Self {
        self.key_decisions = strings(items);
        self
    }
    /// Sets the assumptions.
    pub fn assumptions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, items: I) -> Self {
        self.assumptions = strings(items);
        self
    }
    /// Sets the warnings.
    pub fn warnings<I: IntoIterator<Item = S>, S: Into<String>>(mut self, items: I) -> Self {
        self.warnings = strings(items);
        self
    }
    /// Sets the unresolved errors.
    pub fn errors<I: IntoIterator<Item = S>, S: Into<String>>(mut self, items: I) -> Self {
        self.unresolved_errors = strings(items);
        self
    }
    /// Sets the blockers.
    pub fn blockers<I: IntoIterator<Item = S>, S: Into<String>>(mut self, items: I) -> Self {
        self.blockers = strings(items);
        self
    }
    /// Sets the modified files.
    pub fn files<I: IntoIterator<Item = S>, S: Into<String>>(mut self, files: I) -> Self {
        self.modified_files = strings(files);
        self
    }
    /// Sets the instructions for the successor.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }
    /// Sets how full the context window was, in percent.
    pub fn context_usage(mut self, percent: u8) -> Self {
        self.context_usage_percent = Some(percent);
        self
    }
    /// Sets the metadata object.
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }
    /// Sets when the handoff expires if nobody claims it.
    pub fn expires_at(mut self, at: DateTime<Utc>) -> Self {
        self.expires_at = Some(at);
        self
    }
    /// Sets how many claims may lapse before the handoff fails.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }
    /// Sets the priority: `claim_next` takes the highest first.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
    /// Sets the creator's W3C trace context, which the successor continues.
    pub fn trace_context(
        mut self,
        traceparent: impl Into<String>,
        tracestate: Option<String>,
    ) -> Self {
        self.traceparent = Some(traceparent.into());
        self.tracestate = tracestate;
        self
    }

    /// The pending record this input becomes, with the given id and creation time.
    pub fn into_record(self, id: String, now: DateTime<Utc>) -> Handoff {
        Handoff {
            schema_version: SCHEMA_VERSION,
            id,
            task_id: self.task_id,
            session_id: self.session_id,
            parent_id: self.parent_id,
            kind: self.kind,
            reason: self.reason,
            from_agent: self.from_agent,
            to_agent: self.to_agent,
            goal: self.goal,
            progress_summary: self.progress_summary,
            completed_steps: self.completed_steps,
            pending_steps: self.pending_steps,
            key_decisions: self.key_decisions,
            assumptions: self.assumptions,
            warnings: self.warnings,
            unresolved_errors: self.unresolved_errors,
            blockers: self.blockers,
            modified_files: self.modified_files,
            locked_files: self.locked_files,
            instructions: self.instructions,
            priority_items: self.priority_items,
            success_criteria: self.success_criteria,
            context_usage_percent: self.context_usage_percent,
            metadata: self.metadata,
            protocol: self.protocol,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            created_at: now,
            expires_at: self.expires_at,
            max_attempts: self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS),
            status: Status::Pending,
            claimed_by: None,
            claim_token: None,
            lease_until: None,
            heartbeat_at: None,
            attempts: 0,
            completed_at: None,
            outcome: None,
            priority: self.priority,
            progress: None,
        }
    }
}

/// The creator's part of a record, with its id: what `create` needs to make it again (as
/// `import` does). The inverse of [`NewHandoff::into_record`].
impl From<Handoff> for NewHandoff {
    fn from(h: Handoff) -> Self {
        NewHandoff {
            id: Some(h.id),
            task_id: h.task_id,
            session_id: h.session_id,
            parent_id: h.parent_id,
            kind: h.kind,
            reason: h.reason,
            from_agent: h.from_agent,
            to_agent: h.to_agent,
            goal: h.goal,
            progress_summary: h.progress_summary,
            completed_steps: h.completed_steps,
            pending_steps: h.pending_steps,
            key_decisions: h.key_decisions,
            assumptions: h.assumptions,
            warnings: h.warnings,
            unresolved_errors: h.unresolved_errors,
            blockers: h.blockers,
            modified_files: h.modified_files,
            locked_files: h.locked_files,
            instructions: h.instructions,
            priority_items: h.priority_items,
            success_criteria: h.success_criteria,
            context_usage_percent: h.context_usage_percent,
            metadata: h.metadata,
            protocol: h.protocol,
            expires_at: h.expires_at,
            max_attempts: Some(h.max_attempts),
            priority: h.priority,
            traceparent: h.traceparent,
            tracestate: h.tracestate,
        }
    }
}

/// Kinds and statuses read from their wire names: an unknown word is a validation error naming
/// the field (`kind`, `status`) and every name it may be. (Here rather than in `status.rs`,
/// which sits below the error type.)
macro_rules! read_word {
    ($($name:ident),+) => {$(
        impl FromStr for $name {
            type Err = Error;

            fn from_str(s: &str) -> Result<Self> {
                $name::from_word(s).ok_or_else(|| {
                    let names: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                    Error::invalid(
                        stringify!($name).to_lowercase(),
                        format!("unknown value {s:?}, expected one of {}", names.join(", ")),
                    )
                })
            }
        }
    )+};
}

read_word!(Kind, Status);

/// Why an agent handed over. Its wire form is one string: `context_limit_85`, `timeout_300s`,
/// `explicit`, `error: <message>` or `task_complete`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "uniffi",
    derive(uniffi::Enum),
    uniffi(name = "HandoffReason")
)]
pub enum Reason {
    /// The context window was this full, in percent.
    ContextLimit {
        /// 0..=100
        percent: u8,
    },
    /// The agent ran out of time after this many seconds.
    Timeout {
        /// Seconds the agent ran.
        seconds: u64,
    },
    /// The agent decided to hand over.
    #[default]
    Explicit,
    /// The agent hit an error it could not recover from.
    #[cfg_attr(feature = "uniffi", uniffi(name = "Error"))]
    FatalError {
        /// The error.
        message: String,
    },
    /// The agent's part is done.
    TaskComplete,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::ContextLimit { percent } => write!(f, "context_limit_{percent}"),
            Reason::Timeout { seconds } => write!(f, "timeout_{seconds}s"),
            Reason::Explicit => f.write_str("explicit"),
            Reason::FatalError { message } => write!(f, "error: {message}"),
            Reason::TaskComplete => f.write_str("task_complete"),
        }
    }
}

const REASON_RULE: &str = "expected explicit, task_complete, context_limit_<0..=100>, timeout_<seconds>s or \"error: <message>\"";

impl FromStr for Reason {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let invalid = || Error::invalid("reason", format!("unknown value {s:?}, {REASON_RULE}"));
        match s {
            "explicit" => return Ok(Reason::Explicit),
            "task_complete" => return Ok(Reason::TaskComplete),
            _ => {}
        }
        if let Some(message) = s.strip_prefix("error:") {
            return Ok(Reason::FatalError {
                message: message.trim_start().to_owned(),
            });
        }
        if let Some(percent) = s.strip_prefix("context_limit_") {
            return match digits(percent) {
                Some(percent) if percent <= 100 => Ok(Reason::ContextLimit {
                    percent: percent as u8,
                }),
                _ => Err(invalid()),
            };
        }
        if let Some(seconds) = s.strip_prefix("timeout_").and_then(|t| t.strip_suffix('s')) {
            return digits(seconds)
                .map(|seconds| Reason::Timeout { seconds })
                .ok_or_else(invalid);
        }
        Err(invalid())
    }
}

impl Reason {
    /// The reason a creator gave, in any of the forms callers send: the wire form
    /// (`context_limit_85`, `timeout_300s`, ...) or a bare `context_limit` / `timeout` whose
    /// number comes separately, as MASC's `masc_handover_create` sends it
    /// (`"reason": "context_limit", "context_pct": 85`). No reason is [`Reason::Explicit`]: a
    /// `context_pct` alone is only the context usage.
    ///
    /// ```
    /// use handoff_core::Reason;
    ///
    /// assert_eq!(Reason::from_input(Some("context_limit"), Some(85), None)?, Reason::ContextLimit { percent: 85 });
    /// assert_eq!(Reason::from_input(Some("timeout"), None, Some(300))?.to_string(), "timeout_300s");
    /// assert!(Reason::from_input(Some("context_limit"), None, None).is_err());
    /// # Ok::<(), handoff_core::Error>(())
    /// ```
    pub fn from_input(
        reason: Option<&str>,
        context_pct: Option<u8>,
        timeout_seconds: Option<u64>,
    ) -> Result<Reason> {
        let parsed = match reason {
            None => return Ok(Reason::Explicit),
            Some("context_limit") => match context_pct {
                Some(percent) if percent <= 100 => Reason::ContextLimit { percent },
                Some(_) => {
                    return Err(Error::invalid("context_pct", "must be between 0 and 100"));
                }
                None => {
                    return Err(Error::invalid(
                        "reason",
                        "a bare context_limit needs context_pct (or say context_limit_<percent>)",
                    ));
                }
            },
            Some("timeout") => match timeout_seconds {
                Some(seconds) => Reason::Timeout { seconds },
                None => {
                    return Err(Error::invalid(
                        "reason",
                        "a bare timeout needs timeout_seconds (or say timeout_<seconds>s)",
                    ));
                }
            },
            Some(text) => text.parse()?,
        };
        // A number given twice must agree, or one of them is a mistake.
        match parsed {
            Reason::ContextLimit { percent } if context_pct.is_some_and(|p| p != percent) => {
                Err(Error::invalid(
                    "context_pct",
                    format!("must agree with the reason's percent ({percent})"),
                ))
            }
            Reason::Timeout { seconds } if timeout_seconds.is_some_and(|s| s != seconds) => {
                Err(Error::invalid(
                    "timeout_seconds",
                    format!("must agree with the reason's seconds ({seconds})"),
                ))
            }
            _ => Ok(parsed),
        }
    }
}

/// A plain decimal number: `parse` alone would also accept a leading `+`.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(|_| {
            serde::de::Error::custom(format!("unknown reason {text:?}, {REASON_RULE}"))
        })
    }
}

impl JsonSchema for Reason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Reason".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Why the agent handed over.",
            "type": "string",
            "pattern": "^(explicit|task_complete|context_limit_(100|[1-9]?[0-9])|timeout_[0-9]+s|error:.*)$"
        })
    }
}

/// Checks every rule of a record (the generic ones are `validate`'s).
fn check_record(h: &Handoff, limits: &Limits) -> Result<()> {
    let mut c = Collector::default();
    if h.schema_version != SCHEMA_VERSION {
        c.push(
            "schema_version",
            format!("must be {SCHEMA_VERSION}, is {}", h.schema_version),
        );
    }
    c.ident("id", &h.id);
    c.ident("task_id", &h.task_id);
    c.opt_ident("session_id", h.session_id.as_deref());
    c.opt_ident("parent_id", h.parent_id.as_deref());
    c.opt_agent("from_agent", h.from_agent.as_deref());
    c.opt_agent("to_agent", h.to_agent.as_deref());
    c.opt_agent("claimed_by", h.claimed_by.as_deref());
    if h.goal.trim().is_empty() {
        c.push("goal", "must not be empty");
    }
    text(&mut c, limits, "goal", &h.goal);
    text(&mut c, limits, "progress_summary", &h.progress_summary);
    if let Some(instructions) = &h.instructions {
        text(&mut c, limits, "instructions", instructions);
    }
    if let Some(outcome) = &h.outcome {
        text(&mut c, limits, "outcome", outcome);
    }
    match &h.reason {
        Reason::ContextLimit { percent } if *percent > 100 => {
            c.push("reason", "context_limit percent must be between 0 and 100");
        }
        Reason::FatalError { message } => text(&mut c, limits, "reason", message),
        _ => {}
    }
    for (field, items) in [
        ("completed_steps", &h.completed_steps),
        ("pending_steps", &h.pending_steps),
        ("key_decisions", &h.key_decisions),
        ("assumptions", &h.assumptions),
        ("warnings", &h.warnings),
        ("unresolved_errors", &h.unresolved_errors),
        ("blockers", &h.blockers),
        ("modified_files", &h.modified_files),
        ("locked_files", &h.locked_files),
        ("priority_items", &h.priority_items),
        ("success_criteria", &h.success_criteria),
    ] {
        list(&mut c, limits, field, items);
    }
    if let Some(percent) = h.context_usage_percent
        && percent > 100
    {
        c.push("context_usage_percent", "must be between 0 and 100");
    }
    let too_deep = deeper_than(&h.metadata, limits.max_depth);
    if let Some(depth) = too_deep {
        c.push(
            "metadata",
            format!(
                "must nest at most {} levels, nests {depth} or more",
                limits.max_depth
            ),
        );
    }
    if let Some(expires_at) = h.expires_at
        && expires_at <= h.created_at
    {
        c.push("expires_at", "must be after created_at");
    }
    if h.max_attempts == 0 {
        c.push("max_attempts", "must be at least 1");
    }
    check_trace_context(&mut c, h.traceparent.as_deref(), h.tracestate.as_deref());
    if let Some(progress) = &h.progress {
        check_progress(&mut c, progress);
    }
    if let Some(body) = &h.protocol {
        for problem in protocol::check_body(body, h.kind, &h.task_id, limits) {
            c.push(problem.field, problem.rule);
        }
    }
    // Serialising to measure is a tenth of a create: only do it when a cheap upper bound
    // cannot already show the record is small enough. Metadata nested too deep is never
    // serialised (that recursion could exhaust the stack): it is refused already.
    let size = if too_deep.is_some() || json_size_bound(h) <= limits.max_record_bytes {
        0
    } else {
        json_size(h)
    };
    if size > limits.max_record_bytes {
        c.push(
            "record",
            format!(
                "must be at most {} bytes as JSON, is {size}",
                limits.max_record_bytes
            ),
        );
    }
    c.finish()
}

/// The most a heartbeat's progress may take as JSON: a status line and a few counters, not a
/// result (which `complete` carries).
pub const MAX_PROGRESS_BYTES: usize = 4096;

/// Checks a heartbeat's `progress`: small and shallow.
pub(crate) fn check_progress(c: &mut Collector, progress: &serde_json::Value) {
    let limits = Limits {
        max_depth: crate::validate::MAX_DEPTH,
        max_record_bytes: MAX_PROGRESS_BYTES,
        ..Limits::default()
    };
    c.json("progress", &[progress], &limits);
}

/// Checks a W3C trace context: `traceparent` as version-traceid-parentid-flags in lowercase
/// hex (neither id all zeros, version `ff` refused), `tracestate` only beside one, at most 512
/// printable characters as the specification allows.
pub(crate) fn check_trace_context(c: &mut Collector, parent: Option<&str>, state: Option<&str>) {
    if let Some(parent) = parent {
        let parts: Vec<&str> = parent.split('-').collect();
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        let well_formed = parts.len() == 4
            && hex(parts[0], 2)
            && parts[0] != "ff"
            && hex(parts[1], 32)
            && hex(parts[2], 16)
            && hex(parts[3], 2)
            && !zero(parts[1])
            && !zero(parts[2]);
        if !well_formed {
            c.push(
                "traceparent",
                "must be a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lowercase, ids not all zeros",
            );
        }
    }
    if let Some(state) = state {
        if parent.is_none() {
            c.push("tracestate", "is only kept beside a traceparent");
        }
        if state.len() > 512 || !state.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            c.push(
                "tracestate",
                "must be at most 512 printable ASCII characters",
            );
        }
    }
}

/// An upper bound of the length of a record's JSON form: every byte of text escaped to six,
/// and room to spare for keys, numbers and times.
fn json_size_bound(h: &Handoff) -> usize {
    const FIXED: usize = 2048;
    const PER_ITEM: usize = 8;
    let text = |s: &str| s.len() * 6 + PER_ITEM;
    let opt = |s: &Option<String>| s.as_deref().map_or(0, text);
    let list = |items: &[String]| items.iter().map(|s| text(s)).sum::<usize>();
    let metadata = if h.metadata.is_empty() {
        0
    } else {
        json_size(&h.metadata)
    };
    let protocol = h.protocol.as_ref().map_or(0, json_size);
    FIXED
        + metadata
        + protocol
        + h.progress.as_ref().map_or(0, |_| MAX_PROGRESS_BYTES)
        + [&h.id, &h.task_id, &h.goal, &h.progress_summary]
            .map(|s| text(s))
            .iter()
            .sum::<usize>()
        + [
            &h.session_id,
            &h.parent_id,
            &h.from_agent,
            &h.to_agent,
            &h.instructions,
            &h.claimed_by,
            &h.outcome,
            &h.traceparent,
            &h.tracestate,
        ]
        .map(opt)
        .iter()
        .sum::<usize>()
        + text(&h.reason.to_string())
        + [
            &h.completed_steps,
            &h.pending_steps,
            &h.key_decisions,
            &h.assumptions,
            &h.warnings,
            &h.unresolved_errors,
            &h.blockers,
            &h.modified_files,
            &h.locked_files,
            &h.priority_items,
            &h.success_criteria,
        ]
        .map(|items| list(items))
        .iter()
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_new_record_ends_with_the_lifecycle_tail_a_stored_body_leaves_out() {
        let new = NewHandoff::new("t", "g").into_record("h1".into(), Utc::now());
        assert!(
            new.to_json().ends_with(NEW_LIFECYCLE_TAIL),
            "{}",
            new.to_json()
        );
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        {
            let body = new.stored_body();
            assert!(!body.contains("\"status\""), "{body}");
            // Read back as the backends read a body, before their columns fill the lifecycle.
            assert_eq!(serde_json::from_str::<Handoff>(&body).unwrap(), new);
            // A record with a lifecycle of its own (an import) keeps it in full.
            let mut claimed = new.clone();
            claimed.status = Status::Claimed;
            assert_eq!(claimed.stored_body(), claimed.to_json());
        }
    }
}
