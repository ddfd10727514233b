//! The handover record as the foreign languages see it: the core's [`Handoff`] and its enums
//! (their uniffi form derived in the core), its Markdown and JSON forms, and the fields a
//! caller gives [`crate::Store::create`].

use std::time::SystemTime;

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::ops;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::arguments::{self, object_text, rfc3339};
use crate::error::{HandoffError, Result};

pub use handoff_core::{
    Handoff, Kind as HandoffKind, Reason as HandoffReason, Status as HandoffStatus,
};

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
    /// Which pending handoff `claim_next` takes first: the highest, then the oldest.
    #[uniffi(default = 0)]
    pub priority: i32,
    /// The creator's W3C trace context (`00-<trace id>-<span id>-<flags>`): the successor
    /// starts its span under it, so a chain of agents is one trace.
    #[uniffi(default)]
    pub traceparent: Option<String>,
    /// The vendor part of the trace context, carried with `traceparent`.
    #[uniffi(default)]
    pub tracestate: Option<String>,
}

/// The record as Markdown, ready for a successor's prompt. Secrets in every text field are
/// replaced by `[REDACTED:<rule>]` unless `redact` is false (the owner's opt-out);
/// `handoff_to_json` and the store keep them.
#[uniffi::export(default(redact = true))]
pub fn handoff_to_markdown(handoff: Handoff, redact: bool) -> String {
    if redact {
        handoff.to_markdown()
    } else {
        handoff.to_markdown_unredacted()
    }
}

/// The record's canonical JSON form (the same in every binding).
#[uniffi::export]
pub fn handoff_to_json(handoff: Handoff) -> String {
    handoff.to_json()
}

/// Parses and validates a record from its JSON form; `Validation` names every broken rule.
#[uniffi::export]
pub fn handoff_from_json(json: String) -> Result<Handoff> {
    Ok(Handoff::from_json(&json)?)
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
    fn records_survive_the_json_round_trip() -> Result<()> {
        let original = rich();
        let back = handoff_from_json(handoff_to_json(original.clone()))?;
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
        let mut json: Value = serde_json::from_str(&handoff_to_json(rich())).unwrap_or_default();
        json["metadata"] = serde_json::json!([1]);
        assert!(matches!(
            handoff_from_json(json.to_string()),
            Err(HandoffError::Validation { .. })
        ));
    }
}
