//! The handover record as the foreign languages see it: [`Handoff`], its enums, and the
//! fields a caller gives [`crate::Store::create`].

use std::time::SystemTime;

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::Handoff as CoreHandoff;
use handoff_core::ops;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::arguments::{self, object_text, rfc3339};
use crate::error::{HandoffError, Result};
use crate::protocol::ProtocolBody;

pub use handoff_core::{Kind as HandoffKind, Reason as HandoffReason, Status as HandoffStatus};

/// A handover record: the work, what is known about it, and who holds it.
///
/// The fields up to `max_attempts` are the content, fixed at creation; the fields from
/// `status` on are managed by the store and change with every transition.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Handoff {
    /// The record format's version.
    pub schema_version: u32,
    /// Time-ordered id (UUIDv7) or one supplied by the creator as an idempotency key.
    pub id: String,
    /// The task this handoff belongs to; a task's handoffs form its chain.
    pub task_id: String,
    /// The session the handing-over agent ran in.
    pub session_id: Option<String>,
    /// The handoff this one continues.
    pub parent_id: Option<String>,
    /// What kind of handoff this is.
    pub kind: HandoffKind,
    /// Why the previous agent handed over.
    pub reason: HandoffReason,
    /// The agent handing over.
    pub from_agent: Option<String>,
    /// The agent addressed; none lets any agent claim it.
    pub to_agent: Option<String>,
    /// What the successor must achieve. Never empty.
    pub goal: String,
    /// Where the work stands, in prose.
    pub progress_summary: String,
    /// Steps already done.
    pub completed_steps: Vec<String>,
    /// Steps still to do, in order.
    pub pending_steps: Vec<String>,
    /// Decisions taken, and why, so the successor does not reopen them.
    pub key_decisions: Vec<String>,
    /// Assumptions the work rests on.
    pub assumptions: Vec<String>,
    /// Things the successor must be careful about.
    pub warnings: Vec<String>,
    /// Errors seen and not yet fixed.
    pub unresolved_errors: Vec<String>,
    /// What stops progress right now.
    pub blockers: Vec<String>,
    /// Files changed so far.
    pub modified_files: Vec<String>,
    /// Files the work holds locks on.
    pub locked_files: Vec<String>,
    /// Guidance for the successor.
    pub instructions: Option<String>,
    /// What matters most, first.
    pub priority_items: Vec<String>,
    /// How the successor knows it is done.
    pub success_criteria: Vec<String>,
    /// How full the previous agent's context window was, in percent (0..=100).
    pub context_usage_percent: Option<u8>,
    /// Free-form metadata: a JSON object, as text.
    pub metadata: String,
    /// A manager/worker protocol message's body (docs/design.md §8), typed, with the seed's field
    /// names (`handoff_type`, `worker_report`, `manager_decision`, …); none for any other
    /// handoff. Only the protocol's calls (`initialize`, `report`, `decide`, …) write it.
    pub protocol: Option<ProtocolBody>,
    /// When the handoff was created.
    pub created_at: SystemTime,
    /// When an unclaimed handoff expires; none is never.
    pub expires_at: Option<SystemTime>,
    /// How many claims may lapse before the handoff fails.
    pub max_attempts: u32,
    /// Where the handoff is in its lifecycle.
    pub status: HandoffStatus,
    /// The agent holding (or that last held) the claim.
    pub claimed_by: Option<String>,
    /// The fencing token of the latest claim; it grows with every claim.
    pub claim_token: Option<u64>,
    /// When the current claim lapses unless renewed.
    pub lease_until: Option<SystemTime>,
    /// When the holder last claimed or heartbeated.
    pub heartbeat_at: Option<SystemTime>,
    /// How many claims ended without completion (released or lapsed).
    pub attempts: u32,
    /// When the handoff reached a terminal status.
    pub completed_at: Option<SystemTime>,
    /// The completing agent's result, or why the handoff ended otherwise.
    pub outcome: Option<String>,
}

/// What a caller gives `Store.create`: the task and goal, and whatever else the successor
/// should know. The names are the arguments of `create` in every binding, the CLI and the MCP
/// server; problems are reported under them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, uniffi::Record)]
#[serde(default)]
pub struct CreateOptions {
    /// The task the handoff belongs to.
    pub task_id: String,
    /// What the successor must achieve.
    pub goal: String,
    /// The agent handing over.
    #[uniffi(default)]
    // Checkpoint sets the agents and the kind itself: they are sent only when given, so that
    // it refuses them only then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_agent: Option<String>,
    /// The agent addressed; none lets any agent claim it.
    #[uniffi(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_agent: Option<String>,
    /// The kind; none is `Full`.
    #[uniffi(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<HandoffKind>,
    /// Why; none is `Explicit`.
    #[uniffi(default)]
    pub reason: Option<HandoffReason>,
    /// How full the sender's context window was, in percent. With a `ContextLimit` reason it
    /// must agree with the reason's percent.
    #[uniffi(default)]
    pub context_pct: Option<u8>,
    /// Where the work stands (the record's `progress_summary`).
    #[uniffi(default)]
    pub progress: String,
    /// Steps already done (`completed_steps`).
    #[uniffi(default)]
    pub completed: Vec<String>,
    /// Steps still to do (`pending_steps`).
    #[uniffi(default)]
    pub pending: Vec<String>,
    /// Decisions taken (`key_decisions`).
    #[uniffi(default)]
    pub decisions: Vec<String>,
    /// Assumptions the work rests on.
    #[uniffi(default)]
    pub assumptions: Vec<String>,
    /// Things to be careful about.
    #[uniffi(default)]
    pub warnings: Vec<String>,
    /// Errors not yet fixed (`unresolved_errors`).
    #[uniffi(default)]
    pub errors: Vec<String>,
    /// Files changed so far (`modified_files`).
    #[uniffi(default)]
    pub files: Vec<String>,
    /// Guidance for the successor.
    #[uniffi(default)]
    pub instructions: Option<String>,
    /// A JSON object, as text; none is `{}`.
    #[uniffi(default)]
    #[serde(with = "object_text")]
    pub metadata: Option<String>,
    /// A caller-chosen id: creating again with the same id and content returns the stored
    /// record; with other content it fails with `Conflict`.
    #[uniffi(default)]
    pub id: Option<String>,
    /// The handoff this one continues.
    #[uniffi(default)]
    pub parent_id: Option<String>,
    /// The sender's session.
    #[uniffi(default)]
    pub session_id: Option<String>,
    /// What stops progress right now.
    #[uniffi(default)]
    pub blockers: Vec<String>,
    /// Files the work holds locks on.
    #[uniffi(default)]
    pub locked_files: Vec<String>,
    /// What matters most, first.
    #[uniffi(default)]
    pub priority_items: Vec<String>,
    /// How the successor knows it is done.
    #[uniffi(default)]
    pub success_criteria: Vec<String>,
    /// When an unclaimed handoff expires.
    #[uniffi(default)]
    #[serde(with = "rfc3339")]
    pub expires_at: Option<SystemTime>,
    /// How many claims may lapse before the handoff fails; none is the default (3).
    #[uniffi(default)]
    pub max_attempts: Option<u32>,
}

#[uniffi::export]
impl Handoff {
    /// The record as Markdown, ready for a successor's prompt. Secrets in every text field are
    /// replaced by `[REDACTED:<rule>]` unless `redact` is false (the owner's opt-out); `to_json`
    /// and the store keep them.
    #[uniffi::method(default(redact = true))]
    pub fn to_markdown(&self, redact: bool) -> Result<String> {
        let record = core::Handoff::try_from(self.clone())?;
        Ok(if redact {
            record.to_markdown()
        } else {
            record.to_markdown_unredacted()
        })
    }

    /// The record's canonical JSON form (the same in every binding).
    pub fn to_json(&self) -> Result<String> {
        Ok(core::Handoff::try_from(self.clone())?.to_json())
    }
}

/// Parses and validates a record from its JSON form; `Validation` names every broken rule.
#[uniffi::export]
pub fn handoff_from_json(json: String) -> Result<Handoff> {
    Ok(core::Handoff::from_json(&json)?.into())
}

pub(crate) fn time(at: DateTime<Utc>) -> SystemTime {
    at.into()
}

/// The rule a time breaks when a record cannot hold it: records hold the years
/// -262143..=262142, and a Kotlin `Instant` can reach further.
pub(crate) const OUT_OF_RANGE: &str = "is outside the years a record can hold";

/// `at` in UTC, if a record can hold it.
pub(crate) fn record_time(at: SystemTime) -> Option<DateTime<Utc>> {
    let span = |d: std::time::Duration| chrono::TimeDelta::from_std(d).ok();
    match at.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => span(after).and_then(|d| DateTime::UNIX_EPOCH.checked_add_signed(d)),
        Err(before) => {
            span(before.duration()).and_then(|d| DateTime::UNIX_EPOCH.checked_sub_signed(d))
        }
    }
}

/// `at` in UTC, or a validation error naming `field` when a record cannot hold it.
pub(crate) fn utc(field: &str, at: SystemTime) -> Result<DateTime<Utc>> {
    record_time(at).ok_or_else(|| HandoffError::invalid(field, OUT_OF_RANGE))
}

fn opt_utc(field: &str, at: Option<SystemTime>) -> Result<Option<DateTime<Utc>>> {
    at.map(|at| utc(field, at)).transpose()
}

/// `text` as a record's metadata, or a validation error naming `metadata`.
fn metadata(text: &str) -> Result<core::Metadata> {
    arguments::object(text).map_err(|rule| HandoffError::invalid("metadata", rule))
}

impl CreateOptions {
    /// The options that create `new`: its fields under `create`'s argument names, as the core
    /// renames them (`progress_summary` is `progress`).
    pub(crate) fn from_new(new: &core::NewHandoff) -> Result<CreateOptions> {
        let fields = match arguments::json("", new)? {
            Value::Object(fields) => fields,
            _ => return Err(HandoffError::invalid("arguments", "must be a JSON object")),
        };
        let arguments = fields
            .into_iter()
            .map(|(field, value)| (ops::argument_name(&field), value))
            .collect();
        serde_json::from_value(Value::Object(arguments))
            .map_err(|e| HandoffError::invalid("arguments", e.to_string()))
    }
}

/// A record of type `$ty` (`Handoff` or `CoreHandoff`, a name: a path cannot open a struct
/// literal in a macro) from `$h`, the other one: the fields that cross unchanged are copied,
/// the ones whose types differ are given, converted.
macro_rules! handoff {
    ($ty:ident, $h:ident { $($field:ident: $value:expr),+ $(,)? }) => {
        $ty {
            schema_version: $h.schema_version,
            kind: $h.kind,
            reason: $h.reason,
            status: $h.status,
            id: $h.id,
            task_id: $h.task_id,
            session_id: $h.session_id,
            parent_id: $h.parent_id,
            from_agent: $h.from_agent,
            to_agent: $h.to_agent,
            goal: $h.goal,
            progress_summary: $h.progress_summary,
            completed_steps: $h.completed_steps,
            pending_steps: $h.pending_steps,
            key_decisions: $h.key_decisions,
            assumptions: $h.assumptions,
            warnings: $h.warnings,
            unresolved_errors: $h.unresolved_errors,
            blockers: $h.blockers,
            modified_files: $h.modified_files,
            locked_files: $h.locked_files,
            instructions: $h.instructions,
            priority_items: $h.priority_items,
            success_criteria: $h.success_criteria,
            context_usage_percent: $h.context_usage_percent,
            max_attempts: $h.max_attempts,
            claimed_by: $h.claimed_by,
            claim_token: $h.claim_token,
            attempts: $h.attempts,
            outcome: $h.outcome,
            $($field: $value),+
        }
    };
}

impl From<core::Handoff> for Handoff {
    fn from(h: core::Handoff) -> Self {
        handoff!(
            Handoff,
            h {
                metadata: serde_json::Value::Object(h.metadata).to_string(),
                protocol: h.protocol.map(|body| *body),
                created_at: time(h.created_at),
                expires_at: h.expires_at.map(time),
                lease_until: h.lease_until.map(time),
                heartbeat_at: h.heartbeat_at.map(time),
                completed_at: h.completed_at.map(time),
            }
        )
    }
}

impl TryFrom<Handoff> for core::Handoff {
    type Error = HandoffError;

    /// The core's record; refused only when a caller edited `metadata` into something that is
    /// not a JSON object, or a time beyond what a record can hold.
    fn try_from(h: Handoff) -> Result<Self> {
        Ok(handoff!(
            CoreHandoff,
            h {
                metadata: metadata(&h.metadata)?,
                protocol: h.protocol.map(Box::new),
                created_at: utc("created_at", h.created_at)?,
                expires_at: opt_utc("expires_at", h.expires_at)?,
                lease_until: opt_utc("lease_until", h.lease_until)?,
                heartbeat_at: opt_utc("heartbeat_at", h.heartbeat_at)?,
                completed_at: opt_utc("completed_at", h.completed_at)?,
            }
        ))
    }
}

/// `From` both ways between a binding enum and the core's, variant by variant.
macro_rules! same_enum {
    ($ours:ident <=> $theirs:path { $($variant:ident),+ $(,)? }) => {
        impl From<$theirs> for $ours {
            fn from(value: $theirs) -> Self {
                use $theirs as Theirs;
                match value {
                    $(Theirs::$variant => $ours::$variant,)+
                }
            }
        }

        impl From<$ours> for $theirs {
            fn from(value: $ours) -> Self {
                use $theirs as Theirs;
                match value {
                    $($ours::$variant => Theirs::$variant,)+
                }
            }
        }
    };
}

pub(crate) use same_enum;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn rich() -> core::Handoff {
        let mut metadata = core::Metadata::new();
        metadata.insert(
            "ticket".into(),
            serde_json::json!({"id": 42, "tags": ["a", "b"]}),
        );
        let mut h = core::NewHandoff::new("task-1", "Write the parser")
            .from_agent("claude")
            .reason(core::Reason::ContextLimit { percent: 85 })
            .kind(core::Kind::ErrorRecovery)
            .pending(["tests"])
            .metadata(metadata)
            .into_record(
                "h-1".into(),
                DateTime::from_timestamp_micros(1_767_225_600_123_456).unwrap_or_default(),
            );
        h.lease_until = DateTime::from_timestamp(-86_400, 5_000);
        h
    }

    #[test]
    fn records_survive_the_round_trip() -> Result<()> {
        let original = rich();
        let back = core::Handoff::try_from(Handoff::from(original.clone()))?;
        assert_eq!(back, original);
        Ok(())
    }

    #[test]
    fn times_beyond_a_records_range_are_validation_errors() {
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(10_000_000_000_000);
        match utc("expires_at", far) {
            Err(HandoffError::Validation { problems, .. }) => {
                assert_eq!(problems[0].field, "expires_at");
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
        let long_ago = SystemTime::UNIX_EPOCH - Duration::from_secs(10_000_000_000_000);
        assert!(utc("at", long_ago).is_err());
    }

    #[test]
    fn metadata_must_be_an_object() {
        let mut h = Handoff::from(rich());
        h.metadata = "[1]".into();
        assert!(matches!(
            core::Handoff::try_from(h),
            Err(HandoffError::Validation { .. })
        ));
    }
}
