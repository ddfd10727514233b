//! The handoff record: its JavaScript shape, Markdown and the JSON wire form.
//!
//! A record in JavaScript is a plain object whose keys are the core's field names in camelCase
//! (`task_id` → `taskId`), times are ISO 8601 strings exactly as in the JSON wire form, `null`
//! stands for an absent optional value, and `metadata` is the JSON object as stored, as is a
//! protocol message's `protocol` body (the seed's snake_case names).

use chrono::{DateTime, Utc};
use handoff_core::protocol::ProtocolBody;
use handoff_core::{Handoff, Metadata};
use napi::{Env, Unknown};
use napi_derive::napi;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::convert;
use crate::errors::{Naming, Outcome, invalid, snake_case};
use crate::task::{Mirror, sync};

/// An ISO 8601 time exactly as the JSON wire form writes it (six digits of fraction, so
/// that times sort as text).
pub(crate) fn iso(at: DateTime<Utc>) -> String {
    handoff_core::clock::to_text(&at)
}

/// A handover record: the work, what is known about it, and who holds it.
#[napi(
    object,
    js_name = "Handoff",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsHandoff {
    /// Always 1.
    pub schema_version: u32,
    /// Time-ordered id (UUIDv7), or the one the creator supplied.
    pub id: String,
    /// The task this handoff belongs to.
    pub task_id: String,
    /// The session the handing-over agent ran in.
    pub session_id: Option<String>,
    /// The handoff this one continues.
    pub parent_id: Option<String>,
    /// What kind of handoff this is.
    #[napi(ts_type = "HandoffKind")]
    pub kind: String,
    /// Why the previous agent handed over.
    #[napi(ts_type = "HandoffReason")]
    pub reason: String,
    /// The agent handing over.
    pub from_agent: Option<String>,
    /// The agent addressed; `null` lets any agent claim it.
    pub to_agent: Option<String>,
    /// What the successor must achieve.
    pub goal: String,
    /// Where the work stands, in prose.
    pub progress_summary: String,
    /// Steps already done.
    pub completed_steps: Vec<String>,
    /// Steps still to do, in order.
    pub pending_steps: Vec<String>,
    /// Decisions taken, and why.
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
    /// How full the previous agent's context window was, in percent (0 to 100).
    pub context_usage_percent: Option<u32>,
    /// Free-form JSON, preserved unchanged.
    #[napi(ts_type = "JsonObject")]
    pub metadata: Metadata,
    /// A manager/worker protocol message's body (`initialize`, `report`, `decide`, ...), in
    /// the seed's form as stored: snake_case keys, a key left out when its value is absent or
    /// empty. `null` on a record the protocol did not write.
    #[napi(ts_type = "ProtocolBody")]
    pub protocol: Option<ProtocolBody>,
    /// When the handoff was created (ISO 8601).
    pub created_at: String,
    /// When an unclaimed handoff expires (ISO 8601); `null` is never.
    pub expires_at: Option<String>,
    /// How many claims may lapse before the handoff fails.
    pub max_attempts: u32,
    /// Where the handoff is in its lifecycle.
    #[napi(ts_type = "HandoffStatus")]
    pub status: String,
    /// The agent holding (or that last held) the claim.
    pub claimed_by: Option<String>,
    /// The fencing token of the latest claim.
    pub claim_token: Option<f64>,
    /// When the current claim lapses unless renewed (ISO 8601).
    pub lease_until: Option<String>,
    /// When the holder last claimed or heartbeated (ISO 8601).
    pub heartbeat_at: Option<String>,
    /// How many claims ended without completion.
    pub attempts: u32,
    /// When the handoff reached a terminal status (ISO 8601).
    pub completed_at: Option<String>,
    /// The completing agent's result, or why the handoff ended otherwise.
    pub outcome: Option<String>,
}

impl From<Handoff> for JsHandoff {
    fn from(h: Handoff) -> Self {
        // Destructured in full: a field added to the core record fails to compile here until
        // the binding carries it too.
        let Handoff {
            schema_version,
            id,
            task_id,
            session_id,
            parent_id,
            kind,
            reason,
            from_agent,
            to_agent,
            goal,
            progress_summary,
            completed_steps,
            pending_steps,
            key_decisions,
            assumptions,
            warnings,
            unresolved_errors,
            blockers,
            modified_files,
            locked_files,
            instructions,
            priority_items,
            success_criteria,
            context_usage_percent,
            metadata,
            protocol,
            created_at,
            expires_at,
            max_attempts,
            status,
            claimed_by,
            claim_token,
            lease_until,
            heartbeat_at,
            attempts,
            completed_at,
            outcome,
        } = h;
        JsHandoff {
            schema_version,
            id,
            task_id,
            session_id,
            parent_id,
            kind: kind.as_str().to_owned(),
            reason: reason.to_string(),
            from_agent,
            to_agent,
            goal,
            progress_summary,
            completed_steps,
            pending_steps,
            key_decisions,
            assumptions,
            warnings,
            unresolved_errors,
            blockers,
            modified_files,
            locked_files,
            instructions,
            priority_items,
            success_criteria,
            context_usage_percent: context_usage_percent.map(u32::from),
            metadata,
            protocol: protocol.map(|body| *body),
            created_at: iso(created_at),
            expires_at: expires_at.map(iso),
            max_attempts,
            status: status.as_str().to_owned(),
            claimed_by,
            claim_token: claim_token.map(|t| t as f64),
            lease_until: lease_until.map(iso),
            heartbeat_at: heartbeat_at.map(iso),
            attempts,
            completed_at: completed_at.map(iso),
            outcome,
        }
    }
}

impl Mirror for Handoff {
    type Out = JsHandoff;
    fn mirror(self) -> JsHandoff {
        self.into()
    }
}

/// Reads a record object (as returned by the store) back into the core's record, validating it.
pub(crate) fn handoff(value: &Unknown<'_>, field: &str) -> Outcome<Handoff> {
    convert::object(value, field)?;
    let json = convert::json(value, field)?;
    let Value::Object(fields) = json else {
        return Err(invalid(field, "must be an object"));
    };
    // camelCase keys back to the wire form's snake_case; unknown keys are left for the core
    // to refuse by name.
    let wire: serde_json::Map<String, Value> = fields
        .into_iter()
        .map(|(key, value)| (snake_case(&key), value))
        .collect();
    let text = serde_json::to_string(&wire).map_err(|e| invalid(field, e.to_string()))?;
    Ok(Handoff::from_json(&text)?)
}

/// `toMarkdown` options.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkdownOptions {
    /// Replace secrets (API keys, tokens, passwords, ...) with `[REDACTED:<rule>]` (default
    /// `true`). The Markdown goes to an LLM or a terminal; `false` is the owner's opt-out.
    pub redact: Option<bool>,
}

/// Renders a record as Markdown for a successor's prompt (sections Meta, Current Goal,
/// Progress, Completed, Pending, ...; empty sections are left out). Secrets in every text
/// field are redacted unless `redact: false`; `handoffToJson` and the store keep them.
#[napi(
    catch_unwind,
    ts_args_type = "handoff: Handoff, options?: MarkdownOptions",
    ts_return_type = "string"
)]
pub fn to_markdown(
    env: Env,
    handoff: Unknown<'_>,
    options: Unknown<'_>,
) -> napi::Result<Unknown<'static>> {
    sync(&env, Naming::Js, || {
        let options: MarkdownOptions = convert::options(&options, "options")?;
        let handoff = self::handoff(&handoff, "handoff")?;
        Ok(if options.redact.unwrap_or(true) {
            handoff.to_markdown()
        } else {
            handoff.to_markdown_unredacted()
        })
    })
}

/// The canonical JSON wire form of a record (snake_case keys, `schema_version`), as the Rust
/// core and the Python binding write it.
#[napi(
    catch_unwind,
    ts_args_type = "handoff: Handoff",
    ts_return_type = "string"
)]
pub fn handoff_to_json(env: Env, handoff: Unknown<'_>) -> napi::Result<Unknown<'static>> {
    sync(&env, Naming::Js, || {
        Ok(self::handoff(&handoff, "handoff")?.to_json())
    })
}

/// Parses and validates a record from its JSON wire form. Problems name the JSON's fields.
#[napi(
    catch_unwind,
    ts_args_type = "json: string",
    ts_return_type = "Handoff"
)]
pub fn handoff_from_json(env: Env, json: Unknown<'_>) -> napi::Result<Unknown<'static>> {
    sync(&env, Naming::AsIs, || {
        let text = convert::string(&json, "json")?;
        Ok(Handoff::from_json(&text)?)
    })
}

/// The JSON Schema of the record's wire form, generated from the Rust types.
#[napi(catch_unwind)]
pub fn handoff_json_schema() -> String {
    handoff_core::schema::handoff_schema()
}
