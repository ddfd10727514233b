//! Results as JavaScript gets them, described once, by the core: a result is the core type's
//! serde JSON with its keys in camelCase (`task_id` → `taskId`), built by `JSON.parse` on the
//! JavaScript thread. Which keys are renamed is read from the type's JSON schema: the
//! properties of a described object are; the keys of free-form JSON (`metadata`, a task's
//! `context`, a map of agents) are the caller's own and stay as written. Times are the core's
//! ISO 8601 text, integers numbers.
//!
//! Building the object with `JSON.parse` is about three times faster than setting ~40
//! properties one N-API call at a time, and it makes results plain JSON by construction.

use std::any::{Any, TypeId};

use handoff_core::Chain;
use handoff_core::store::{Claim, Task};
use napi::bindgen_prelude::{Function, JsObjectValue, Object};
use napi::{Env, Unknown};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::errors::camel_case;
use crate::run::{Settle, ToJs};

/// The core's types whose objects keep the core's snake_case keys in JavaScript, with every
/// object inside them: curated memory, bundles and replays, which verifiers, judges and other stores
/// read as the core writes them, and a protocol message's body and a run's history (the seed's
/// names, as stored).
const AS_WRITTEN: &[&str] = &[
    "TaskReplay",
    "TimelineEntry",
    "AgentContribution",
    "TaskOutcome",
    "TaskComparison",
    "Overlap",
    "Conversation",
    "Fact",
    "BranchInfo",
    "VerifiedItem",
    "VerifyReport",
    "MergeReport",
    "CurationEvent",
    "Bundle",
    "ImportReport",
    "TrustedKey",
];

/// The core's types that JavaScript gets exactly as the core writes them, a key left out when
/// the core leaves it out: a protocol message's body and a run's history (the seed's form, as
/// stored), a bundle's portable form and the messages it and a conversation hold. They are as
/// written too, so they are not listed in `AS_WRITTEN` again.
const STORED: &[&str] = &[
    "ProtocolBody",
    "HistoryItem",
    "BundleData",
    "StoredMessage",
    "Message",
    "ToolCall",
    "PickedTo",
];

/// Keys that JavaScript names otherwise than in camelCase, as (type, key, JavaScript key): the
/// names this package published before the core had the type.
const RENAMED: &[(&str, &str, &str)] = &[("Claim", "claim_secret", "secret")];

/// Keys JavaScript does not get, as (type, key): the store's bookkeeping, which this package
/// never showed (a claim's lease end is its handoff's `leaseUntil`).
const LEFT_OUT: &[(&str, &str)] = &[
    ("Claim", "lease_until"),
    ("TaskHeader", "events"),
    ("TaskHeader", "roots"),
    ("TaskHeader", "waiting"),
    ("Task", "events"),
    ("Task", "roots"),
    ("Task", "waiting"),
    ("StepState", "position"),
    ("StepState", "dependents"),
    ("StepState", "waiting_on"),
    ("StepState", "start_to_log"),
];

/// How results are named, for `scripts/gen-types.mjs` (through `_catalogJson`), which types
/// them as this module writes them.
pub(crate) fn naming() -> Value {
    serde_json::json!({
        "as_written": AS_WRITTEN,
        "stored": STORED,
        "renamed": RENAMED,
        "left_out": LEFT_OUT,
    })
}

/// A result as JSON text, its keys as JavaScript shows them: made anywhere, parsed on the
/// JavaScript thread.
pub struct Json(String);

impl Json {
    /// `value` as JavaScript shows it, with `T`'s schema.
    pub(crate) fn of<T: Serialize + JsonSchema + 'static>(value: &T) -> handoff_core::Result<Json> {
        if TypeId::of::<T>() == TypeId::of::<()>() {
            // Nothing: `undefined`, not `null`.
            return Ok(Json(String::new()));
        }
        Json::plain(&value_of(value)?)
    }

    /// `value`'s JSON as it is, keys and all: a question for a callable, or a value of this
    /// face's own whose keys are already JavaScript's.
    pub(crate) fn plain<T: Serialize + ?Sized>(value: &T) -> handoff_core::Result<Json> {
        serde_json::to_string(value)
            .map(Json)
            .map_err(unserialisable)
    }

    /// Parses it on the JavaScript thread.
    pub(crate) fn parse<'env>(self, env: &Env) -> napi::Result<Unknown<'env>> {
        if self.0.is_empty() {
            return env.get_global()?.get_named_property("undefined");
        }
        let json: Object<'_> = env.get_global()?.get_named_property("JSON")?;
        let parse: Function<'_, String, Unknown<'env>> = json.get_named_property("parse")?;
        parse.call(self.0)
    }
}

fn unserialisable(err: serde_json::Error) -> handoff_core::Error {
    handoff_core::Error::storage(format!("cannot serialise a result: {err}"))
}

impl ToJs for Json {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        self.parse(env)
    }
}

impl Settle for Json {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        self.parse(&env)
    }
}

/// A core value to hand to JavaScript as it shows it, converted where the value settles: on the
/// JavaScript thread.
pub(crate) struct Out<T>(pub(crate) T);

impl<T: Serialize + JsonSchema + Send + 'static> ToJs for Out<T> {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        to_js(env, &self.0)
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> Settle for Out<T> {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        to_js(&env, &self.0)
    }
}

/// `value` as JavaScript shows it, as JSON.
pub(crate) fn value_of<T: Serialize + JsonSchema + 'static>(
    value: &T,
) -> handoff_core::Result<Value> {
    let schema = handoff_core::ops::result_schema::<T>();
    let schema = schema.as_value();
    let json = serde_json::to_value(value).map_err(unserialisable)?;
    let walk = Walk {
        defs: schema.get("$defs").and_then(Value::as_object),
        camel: true,
    };
    let mut json = walk.value(json, schema);
    beyond_the_core(value, &mut json);
    Ok(json)
}

/// What this package's results carry beyond the core type's JSON, as published before the core
/// described them: a chain's `path` and `text`, a claim's lease in (fractional) seconds, a
/// task's steps' attempts.
fn beyond_the_core(value: &dyn Any, json: &mut Value) {
    let claim = value
        .downcast_ref::<Claim>()
        .or_else(|| value.downcast_ref::<Option<Claim>>()?.as_ref());
    if let (Some(claim), Value::Object(map)) = (claim, &mut *json) {
        map.insert("leaseSeconds".to_owned(), claim.lease.as_secs_f64().into());
    }
    // A step's attempts as they apply: the default when its plan gave none.
    if let (Some(task), Value::Object(map)) = (value.downcast_ref::<Task>(), &mut *json) {
        let steps = map.get_mut("steps").and_then(Value::as_array_mut);
        for (step, json) in task.steps.iter().zip(steps.into_iter().flatten()) {
            json["maxAttempts"] = step.spec.attempts().into();
        }
    }
    if let (Some(chain), Value::Object(map)) = (value.downcast_ref::<Chain>(), json) {
        map.insert("path".to_owned(), chain.path().into());
        map.insert("text".to_owned(), chain.to_string().into());
    }
}

/// `value` as JavaScript shows it, on the JavaScript thread.
pub(crate) fn to_js<'env, T: Serialize + JsonSchema + 'static>(
    env: &Env,
    value: &T,
) -> napi::Result<Unknown<'env>> {
    parsed(env, Json::of(value))
}

/// `value`'s JSON as it is, on the JavaScript thread: a value of this face's own whose keys
/// are already JavaScript's.
pub(crate) fn plain_to_js<'env, T: Serialize + ?Sized>(
    env: &Env,
    value: &T,
) -> napi::Result<Unknown<'env>> {
    parsed(env, Json::plain(value))
}

fn parsed<'env>(env: &Env, json: handoff_core::Result<Json>) -> napi::Result<Unknown<'env>> {
    json.map_err(|err| napi::Error::from_reason(err.to_string()))?
        .parse(env)
}

/// Renames a value's keys along its schema.
struct Walk<'a> {
    defs: Option<&'a Map<String, Value>>,
    /// Whether keys become camelCase here (not inside an [`AS_WRITTEN`] type).
    camel: bool,
}

impl<'a> Walk<'a> {
    /// The definition `schema` refers to, with its name.
    fn target(&self, schema: &'a Value) -> Option<(&'a str, &'a Value)> {
        let name = schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?;
        Some((name, self.defs?.get(name)?))
    }

    fn value(&self, value: Value, schema: &'a Value) -> Value {
        match self.target(schema) {
            Some((name, _)) if STORED.contains(&name) => value,
            Some((name, def)) if self.camel && AS_WRITTEN.contains(&name) => {
                let written = Walk {
                    defs: self.defs,
                    camel: false,
                };
                written.shaped(value, def, Some(name))
            }
            Some((name, def)) => self.shaped(value, def, Some(name)),
            None => self.shaped(value, schema, None),
        }
    }

    /// `value` met where `schema` (the type `name`'s, if named) describes it.
    fn shaped(&self, value: Value, schema: &'a Value, name: Option<&str>) -> Value {
        if !self.own_properties(schema) {
            // A choice (an `Option`, an untagged enum): the first alternative the value fits.
            for alternative in alternatives(schema) {
                if self.fits(&value, alternative) {
                    return self.value(value, alternative);
                }
            }
        }
        match value {
            Value::Object(map) => Value::Object(self.object(map, schema, name)),
            Value::Array(items) => {
                let Some(item) = schema.get("items").filter(|i| i.is_object()) else {
                    return Value::Array(items);
                };
                Value::Array(items.into_iter().map(|v| self.value(v, item)).collect())
            }
            other => other,
        }
    }

    fn own_properties(&self, schema: &Value) -> bool {
        schema.get("properties").is_some_and(Value::is_object)
    }

    fn object(
        &self,
        map: Map<String, Value>,
        schema: &'a Value,
        name: Option<&str>,
    ) -> Map<String, Value> {
        let mut properties = self.properties(schema);
        if self.own_properties(schema) {
            // Fields beside a flattened enum (an event's `kind` and `detail`): the variant's.
            let variant = alternatives(schema).find(|a| self.tagged(&map, a));
            properties.extend(variant.map(|v| self.properties(v)).unwrap_or_default());
        }
        if properties.is_empty() {
            // Free-form JSON, or a map whose keys are the caller's (values may be described).
            let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) else {
                return map;
            };
            return map
                .into_iter()
                .map(|(k, v)| (k, self.value(v, values)))
                .collect();
        }
        let rename = |key: &str| {
            if !self.camel {
                return key.to_owned();
            }
            RENAMED
                .iter()
                .find(|(ty, from, _)| Some(*ty) == name && *from == key)
                .map_or_else(|| camel_case(key), |(_, _, to)| (*to).to_owned())
        };
        let mut out: Map<String, Value> = Map::new();
        let shown = |key: &str| {
            !LEFT_OUT
                .iter()
                .any(|(ty, k)| Some(*ty) == name && *k == key)
        };
        if name.is_some() {
            // A described type's every key, as this package always wrote them: what the core
            // leaves out when empty (`members`, `resultSummary`) as empty (`[]`, `null`).
            for (key, property) in &properties {
                if !map.contains_key(*key)
                    && shown(key)
                    && let Some(empty) = self.empty(property)
                {
                    out.insert(rename(key), empty);
                }
            }
        }
        for (key, v) in map.into_iter().filter(|(k, _)| shown(k)) {
            let v = match properties.iter().find(|(k, _)| *k == key) {
                Some((_, property)) => self.value(v, property),
                None => v,
            };
            out.insert(rename(&key), v);
        }
        out
    }

    /// The empty value of a property the core may leave out: `null` where it may be null, else
    /// an empty list, object or text, `false` or 0.
    fn empty(&self, property: &'a Value) -> Option<Value> {
        let property = self.target(property).map_or(property, |(_, def)| def);
        if alternatives(property).any(|a| a.get("type").and_then(Value::as_str) == Some("null")) {
            return Some(Value::Null);
        }
        let types = types(property);
        let empty = match types.as_slice() {
            t if t.contains(&"null") => Value::Null,
            ["array"] => Value::Array(Vec::new()),
            ["object"] => Value::Object(Map::new()),
            ["string"] => Value::String(String::new()),
            ["boolean"] => Value::Bool(false),
            ["integer"] | ["number"] => Value::from(0),
            _ => return None,
        };
        Some(empty)
    }

    /// Whether `map` is of the variant `schema`: each of its constants (the tag) is in `map`.
    fn tagged(&self, map: &Map<String, Value>, schema: &'a Value) -> bool {
        let properties = self.properties(schema);
        let mut constants = properties
            .iter()
            .filter_map(|(k, p)| Some((*k, p.get("const")?)))
            .peekable();
        constants.peek().is_some() && constants.all(|(k, c)| map.get(k) == Some(c))
    }

    /// The properties `schema` describes, with those of what it is made of (`allOf`, a
    /// flattened part).
    fn properties(&self, schema: &'a Value) -> Vec<(&'a str, &'a Value)> {
        let schema = self.target(schema).map_or(schema, |(_, def)| def);
        let mut found: Vec<(&str, &Value)> = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            found.extend(self.properties(part));
        }
        found
    }

    /// Whether `value` may be of `schema`: its JSON type, and for an object its keys (each
    /// described, the required ones there, the constants equal: a tagged enum's variant).
    fn fits(&self, value: &Value, schema: &'a Value) -> bool {
        let schema = self.target(schema).map_or(schema, |(_, def)| def);
        if !self.own_properties(schema) && alternatives(schema).next().is_some() {
            return alternatives(schema).any(|a| self.fits(value, a));
        }
        if let Some(constant) = schema.get("const") {
            return constant == value;
        }
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let types = types(schema);
        if !types.is_empty()
            && !types
                .iter()
                .any(|t| *t == kind || (*t == "number" && kind == "integer"))
        {
            return false;
        }
        let Value::Object(map) = value else {
            return true;
        };
        let mut properties = self.properties(schema);
        if let Some(variant) = alternatives(schema).find(|a| self.tagged(map, a)) {
            properties.extend(self.properties(variant));
        }
        if properties.is_empty() {
            return true;
        }
        let required = schema.get("required").and_then(Value::as_array);
        let has_required = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .all(|k| map.contains_key(k));
        has_required
            && map.iter().all(|(k, v)| {
                properties
                    .iter()
                    .find(|(p, _)| p == k)
                    .is_some_and(|(_, p)| p.get("const").is_none_or(|c| c == v))
            })
    }
}

/// The alternatives of a choice (`anyOf`, `oneOf`).
fn alternatives(schema: &Value) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| schema.get(k)?.as_array())
        .flatten()
}

/// The JSON types `schema` names (`"type": "string"` or a list of them).
fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}
