//! The handoff record: its JavaScript shape, Markdown and the JSON wire form.
//!
//! A record in JavaScript is a plain object whose keys are the core's field names in camelCase
//! (`task_id` → `taskId`), times are ISO 8601 strings exactly as in the JSON wire form, `null`
//! stands for an absent optional value, and `metadata` is the JSON object as stored, as is a
//! protocol message's `protocol` body (the seed's snake_case names).

use chrono::{DateTime, Utc};
use handoff_core::Handoff;
use napi::{Env, Unknown};
use napi_derive::napi;
use serde::Deserialize;
use serde_json::Value;

use crate::convert;
use crate::errors::{Naming, Outcome, invalid, snake_case};
use crate::run::sync;

/// An ISO 8601 time exactly as the JSON wire form writes it (six digits of fraction, so
/// that times sort as text).
pub(crate) fn iso(at: DateTime<Utc>) -> String {
    handoff_core::clock::to_text(&at)
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
