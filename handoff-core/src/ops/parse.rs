//! Reading an operation's arguments from a JSON value with every problem found at once, each
//! named by its argument path (`completed[2]`, `claim.token`) and phrased from the argument
//! type's schema, so that every face reports the same list.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use serde_path_to_error::Segment;

use crate::error::{Error, Problem, Result};

/// How many problems one call reports at most: each costs one more attempt to deserialize.
const MAX_PROBLEMS: usize = 64;

/// Reads `A` from `value`. Unknown top-level names, wrong types and values are reported
/// together; when the rest of the value still reads, `check` adds the rules beyond types for
/// the arguments not already named.
pub(crate) fn read<A, F>(value: Value, check: F) -> Result<A>
where
    A: DeserializeOwned + JsonSchema + 'static,
    F: Fn(&A) -> Vec<Problem>,
{
    let schema = arguments_schema::<A>();
    let mut value = match value {
        Value::Null => Value::Object(Map::new()),
        Value::Object(map) => Value::Object(map),
        other => {
            return Err(Error::invalid(
                "arguments",
                format!(
                    "must be an object of named arguments, not {}",
                    type_word(&other)
                ),
            ));
        }
    };
    let mut problems = unknown_names(&schema, &mut value);
    let mut spelled = Vec::new();
    canonical_names(
        &schema,
        schema.as_value(),
        &mut value,
        "",
        0,
        &mut problems,
        &mut spelled,
    );
    let as_spelled = |problems: Vec<Problem>| Error::Validation {
        problems: problems
            .into_iter()
            .map(|p| Problem::new(respelled(&spelled, &p.field), p.rule))
            .collect(),
    };
    let mut parsed = None;
    while problems.len() < MAX_PROBLEMS {
        match serde_path_to_error::deserialize::<_, A>(&value) {
            Ok(args) => {
                parsed = Some(args);
                break;
            }
            Err(err) => {
                let segments: Vec<Segment> = err.path().iter().cloned().collect();
                let message = err.into_inner().to_string();
                if !report(&schema, &segments, &message, &mut value, &mut problems) {
                    break;
                }
            }
        }
    }
    let Some(args) = parsed else {
        return Err(as_spelled(problems));
    };
    for problem in check(&args) {
        if !problems.iter().any(|p| covers(&p.field, &problem.field)) {
            problems.push(problem);
        }
    }
    if problems.is_empty() {
        Ok(args)
    } else {
        Err(as_spelled(problems))
    }
}

/// How deep in the arguments other names are looked for: lists of records (`create_many`'s
/// items) and their records, with room to spare.
const MAX_ALIAS_DEPTH: usize = 8;

/// Renames each argument given under another of its names (a property's `x-aliases`: an older
/// spelling, or a seed's name for it) to its own name, in the object `value` described by
/// `node` and in the records it holds, noting (own path, path as given) in `spelled`. An
/// argument given under two of its names is a problem naming both; its own name's value, or
/// the first other one's, is kept for the rest of the checks.
fn canonical_names(
    root: &Schema,
    node: &Value,
    value: &mut Value,
    at: &str,
    depth: usize,
    problems: &mut Vec<Problem>,
    spelled: &mut Vec<(String, String)>,
) {
    let Some(node) = resolve(root, node) else {
        return;
    };
    let (Some(Value::Object(properties)), Value::Object(map)) = (node.get("properties"), value)
    else {
        return;
    };
    for (name, property) in properties {
        let aliases = property.get("x-aliases").and_then(Value::as_array);
        let given: Vec<&str> = aliases
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|alias| map.contains_key(*alias))
            .collect();
        let Some(first) = given.first().copied() else {
            continue;
        };
        let kept = (!map.contains_key(name)).then_some(first);
        for alias in given.iter().filter(|a| Some(**a) != kept) {
            let other = kept.unwrap_or(name);
            problems.push(Problem::new(
                join(at, alias),
                format!("is another name for {name}, given as {other} too: give one of them"),
            ));
            map.remove(*alias);
        }
        if let Some(alias) = kept
            && let Some(v) = map.remove(alias)
        {
            map.insert(name.clone(), v);
            spelled.push((join(at, name), join(at, alias)));
        }
    }
    if depth >= MAX_ALIAS_DEPTH {
        return;
    }
    // The records inside: an object argument, or a list of them.
    for (name, property) in properties {
        let (Some(child), Some(property)) = (map.get_mut(name), resolve(root, property)) else {
            continue;
        };
        let here = join(at, name);
        match (property.get("items"), child) {
            (Some(items), Value::Array(list)) => {
                for (i, item) in list.iter_mut().enumerate() {
                    let at = format!("{here}[{i}]");
                    canonical_names(root, items, item, &at, depth + 1, problems, spelled);
                }
            }
            (None, child @ Value::Object(_)) if property.get("properties").is_some() => {
                canonical_names(root, &property, child, &here, depth + 1, problems, spelled);
            }
            _ => {}
        }
    }
}

/// `field` as the caller spelled its argument: under the other name it was given by, if any
/// (`priority_objectives[1]` rather than `priority_items[1]`).
fn respelled(spelled: &[(String, String)], field: &str) -> String {
    for (own, given) in spelled {
        if let Some(rest) = field.strip_prefix(own.as_str())
            && (rest.is_empty() || rest.starts_with(['.', '[']))
        {
            return format!("{given}{rest}");
        }
    }
    field.to_owned()
}

/// The JSON schema of an argument type `A` (the catalog's `arguments`), made once per type.
pub fn arguments_schema<A: JsonSchema + 'static>() -> Arc<Schema> {
    cached::<A>(0, || schemars::schema_for!(A))
}

/// The JSON schema of a result type `T` (the catalog's `result`), made once per type: a named
/// type (a struct, an enum) as a reference to its definition under `$defs`, so that every face
/// names it as the core does; lists, options and plain values inline.
pub fn result_schema<T: JsonSchema + 'static>() -> Arc<Schema> {
    cached::<T>(1, || {
        let mut generator = schemars::SchemaGenerator::default();
        let mut schema = generator.subschema_for::<T>();
        let defs = generator.take_definitions(true);
        if !defs.is_empty() {
            schema.insert("$defs".to_owned(), Value::Object(defs));
        }
        schema
    })
}

/// Schemas made, by use (0: arguments, 1: results) and type.
type SchemaCache = RwLock<HashMap<(u8, TypeId), Arc<Schema>>>;

/// The schema `make` builds for `T`, made once per use (`kind`) and type.
fn cached<T: 'static>(kind: u8, make: impl FnOnce() -> Schema) -> Arc<Schema> {
    static CACHE: OnceLock<SchemaCache> = OnceLock::new();
    let cache = CACHE.get_or_init(RwLock::default);
    let key = (kind, TypeId::of::<T>());
    if let Some(schema) = cache.read().ok().and_then(|c| c.get(&key).cloned()) {
        return schema;
    }
    let schema = Arc::new(make());
    if let Ok(mut cache) = cache.write() {
        cache.insert(key, Arc::clone(&schema));
    }
    schema
}

/// Whether a problem already reported at `reported` covers one at `field` (the same argument,
/// or a part of it).
fn covers(reported: &str, field: &str) -> bool {
    field == reported
        || field
            .strip_prefix(reported)
            .is_some_and(|rest| rest.starts_with(['.', '[']))
}

/// Reports and removes the top-level names the schema does not know (a property's
/// `x-aliases` are known names too).
fn unknown_names(schema: &Schema, value: &mut Value) -> Vec<Problem> {
    let (Some(Value::Object(known)), Value::Object(map)) = (schema.get("properties"), value) else {
        return Vec::new();
    };
    let is_known = |key: &str| {
        known.contains_key(key)
            || known.values().any(|property| {
                property
                    .get("x-aliases")
                    .and_then(Value::as_array)
                    .is_some_and(|aliases| aliases.iter().any(|a| a.as_str() == Some(key)))
            })
    };
    let unknown: Vec<String> = map.keys().filter(|key| !is_known(key)).cloned().collect();
    unknown
        .into_iter()
        .map(|key| {
            map.remove(&key);
            Problem::new(key, "is not an argument of this operation")
        })
        .collect()
}

/// Adds the problem serde found at `path` and removes the offending value, so that the next
/// attempt finds the next problem; false when nothing more can be learnt.
fn report(
    schema: &Schema,
    path: &[Segment],
    message: &str,
    value: &mut Value,
    problems: &mut Vec<Problem>,
) -> bool {
    let field = field_name(path);
    if let Some(missing) = quoted_after(message, "missing field ") {
        let field = join(&field, &missing);
        let known = problems.iter().any(|p| covers(&p.field, &field));
        if !known {
            problems.push(Problem::new(field.clone(), "is required"));
        }
        // A stand-in lets the next attempt reach the arguments after it; once is enough.
        let mut at = path.to_vec();
        at.push(Segment::Map { key: missing });
        let stand_in = schema_at(schema, &at).and_then(|node| placeholder(schema, &node));
        return match (known, stand_in) {
            (false, Some(stand_in)) => insert_at(value, path, &at, stand_in),
            _ => false,
        };
    }
    if let Some(unknown) = quoted_after(message, "unknown field ") {
        // serde's path already ends at the unknown name.
        let (field, parent) = match path.last() {
            Some(Segment::Map { key }) if *key == unknown => (field, &path[..path.len() - 1]),
            _ => (join(&field, &unknown), path),
        };
        problems.push(Problem::new(field, "is not a known field"));
        return remove_at(value, parent, Some(&unknown));
    }
    let node = schema_at(schema, path);
    // serde says what it expected in Rust's words (`u8`, `a sequence`); the schema says it in
    // the caller's. A time's parser reports its own words, replaced the same way.
    let is_time = |n: &Value| n.get("format").and_then(Value::as_str) == Some("date-time");
    let rule = match &node {
        Some(n) if is_type_or_value_error(message) || is_time(n) => {
            describe(schema, n).unwrap_or_else(|| message.to_owned())
        }
        _ => message.to_owned(),
    };
    // A bad item of a list of plain values: name every bad item of that list at once.
    if let (Some(Segment::Seq { .. }), Some(parent)) = (path.last(), path.len().checked_sub(1)) {
        let list_path = &path[..parent];
        if let (Some(items), Some(Value::Array(list))) = (
            schema_at(schema, list_path).and_then(|s| s.get("items").cloned()),
            lookup(value, list_path),
        ) {
            let list_field = field_name(list_path);
            for (i, item) in list.iter().enumerate() {
                if !plain_fits(schema, &items, item) {
                    problems.push(Problem::new(format!("{list_field}[{i}]"), rule.clone()));
                }
            }
            if problems.iter().any(|p| p.field == field) {
                return replace_at(value, list_path, Value::Array(Vec::new()));
            }
        }
    }
    if problems.iter().any(|p| p.field == field) {
        // The placeholder did not do: without the value, the next attempt says what else.
        return remove_at(value, path, None);
    }
    problems.push(Problem::new(field, rule));
    // A stand-in of the right type keeps a required argument present, so that the next
    // attempt reaches the arguments after it.
    match node.and_then(|node| placeholder(schema, &node)) {
        Some(stand_in) => replace_at(value, path, stand_in),
        None => remove_at(value, path, None),
    }
}

/// A value that fits `node`'s type: what stands in for a value already reported.
fn placeholder(root: &Schema, node: &Value) -> Option<Value> {
    if let Some(values) = choices(root, node) {
        return values.into_iter().next().map(Value::String);
    }
    let kind = match node.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null")?,
        _ => return None,
    };
    Some(match kind {
        "string" if node.get("format").and_then(Value::as_str) == Some("date-time") => {
            Value::String("1970-01-01T00:00:00Z".to_owned())
        }
        "string" => Value::String(String::new()),
        "boolean" => Value::Bool(false),
        "integer" => Value::from(node.get("minimum").and_then(Value::as_u64).unwrap_or(0)),
        "number" => Value::from(1.0),
        "array" => Value::Array(Vec::new()),
        _ => return None,
    })
}

/// Adds the member `at`'s last name to the object at `parent`.
fn insert_at(value: &mut Value, parent: &[Segment], at: &[Segment], new: Value) -> bool {
    let Some(Segment::Map { key }) = at.last() else {
        return false;
    };
    lookup_mut(value, parent)
        .and_then(Value::as_object_mut)
        .is_some_and(|map| map.insert(key.clone(), new).is_none())
}

/// Puts `new` where the value at `path` was.
fn replace_at(value: &mut Value, path: &[Segment], new: Value) -> bool {
    match lookup_mut(value, path) {
        Some(node) => {
            *node = new;
            true
        }
        None => false,
    }
}

fn is_type_or_value_error(message: &str) -> bool {
    [
        "invalid type:",
        "invalid value:",
        "invalid length",
        "unknown variant",
    ]
    .iter()
    .any(|start| message.starts_with(start))
}

/// `missing field `goal`` → `goal`.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?.strip_prefix('`')?;
    Some(rest[..rest.find('`')?].to_owned())
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `claim.token`, `completed[2]`: the argument path in the form every face shows.
pub(crate) fn field_name(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

fn lookup<'v>(value: &'v Value, path: &[Segment]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, segment| match segment {
        Segment::Seq { index } => v.get(*index),
        Segment::Map { key } => v.get(key),
        _ => Some(v),
    })
}

fn lookup_mut<'v>(value: &'v mut Value, path: &[Segment]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, segment| match segment {
        Segment::Seq { index } => v.get_mut(*index),
        Segment::Map { key } => v.get_mut(key),
        _ => Some(v),
    })
}

/// Removes the value at `path` (or the member `key` of it). A list item cannot be removed
/// without renumbering the others, so its whole list goes.
fn remove_at(value: &mut Value, path: &[Segment], key: Option<&str>) -> bool {
    let (target, last) = match key {
        Some(key) => (path, key.to_owned()),
        None => {
            let Some(end) = path.iter().rposition(|s| matches!(s, Segment::Map { .. })) else {
                return false;
            };
            let Segment::Map { key } = &path[end] else {
                return false;
            };
            (&path[..end], key.clone())
        }
    };
    lookup_mut(value, target)
        .and_then(Value::as_object_mut)
        .is_some_and(|map| map.remove(&last).is_some())
}

/// The schema of the value at `path`, following `$ref`s and nullable wrappers.
fn schema_at(root: &Schema, path: &[Segment]) -> Option<Value> {
    let mut node = resolve(root, root.as_value())?;
    for segment in path {
        let next = match segment {
            Segment::Map { key } => node.get("properties").and_then(|p| p.get(key)).cloned(),
            Segment::Seq { .. } => node.get("items").cloned(),
            _ => Some(node.clone()),
        }?;
        node = resolve(root, &next)?;
    }
    Some(node)
}

/// Follows a `$ref` and unwraps `T | null` to `T`.
fn resolve(root: &Schema, node: &Value) -> Option<Value> {
    let mut node = node.clone();
    for _ in 0..8 {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            let name = reference.strip_prefix("#/$defs/")?;
            node = root.get("$defs")?.get(name)?.clone();
            continue;
        }
        let alternatives = node.get("anyOf").or_else(|| node.get("oneOf"));
        if let Some(Value::Array(alternatives)) = alternatives {
            let not_null: Vec<&Value> = alternatives
                .iter()
                .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if let [only] = not_null.as_slice() {
                node = (*only).clone();
                continue;
            }
        }
        return Some(node);
    }
    Some(node)
}

/// The rule a value must follow, in words: `must be a string`, `must be a whole number from 0
/// to 100`, `must be one of error, first_wins`.
fn describe(root: &Schema, node: &Value) -> Option<String> {
    if let Some(values) = choices(root, node) {
        return Some(format!("must be one of {}", values.join(", ")));
    }
    let types: Vec<&str> = match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => return None,
    };
    let phrase = match types.as_slice() {
        ["string"] if node.get("format").and_then(Value::as_str) == Some("date-time") => {
            "must be a date and time (RFC 3339, e.g. 2026-01-31T12:00:00Z)".to_owned()
        }
        ["string"] => "must be a string".to_owned(),
        ["string", "integer"] => "must be a string or a whole number".to_owned(),
        ["boolean"] => "must be true or false".to_owned(),
        ["number"] => "must be a number".to_owned(),
        ["integer"] => {
            let min = node.get("minimum").and_then(Value::as_u64);
            let max = node.get("maximum").and_then(Value::as_u64);
            match (min, max) {
                (Some(min), Some(max)) => format!("must be a whole number from {min} to {max}"),
                (Some(min), None) => format!("must be a whole number of at least {min}"),
                _ => "must be a whole number".to_owned(),
            }
        }
        ["array"] => match node.get("items").and_then(|i| resolve(root, i)) {
            Some(items) if items.get("type").and_then(Value::as_str) == Some("string") => {
                "must be a list of strings".to_owned()
            }
            _ => "must be a list".to_owned(),
        },
        ["object"] => "must be an object".to_owned(),
        _ => return None,
    };
    Some(phrase)
}

/// The values an enumeration allows, when `node` is one.
fn choices(root: &Schema, node: &Value) -> Option<Vec<String>> {
    if let Some(Value::Array(values)) = node.get("enum") {
        return Some(
            values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        );
    }
    if let Some(value) = node.get("const").and_then(Value::as_str) {
        return Some(vec![value.to_owned()]);
    }
    let Some(Value::Array(alternatives)) = node.get("oneOf").or_else(|| node.get("anyOf")) else {
        return None;
    };
    let mut all = Vec::new();
    for alternative in alternatives {
        all.extend(choices(root, &resolve(root, alternative)?)?);
    }
    Some(all)
}

/// Whether a plain value (string, number, boolean) fits a plain schema; anything else is left
/// to serde and counts as fitting.
fn plain_fits(root: &Schema, schema: &Value, value: &Value) -> bool {
    let Some(node) = resolve(root, schema) else {
        return true;
    };
    match node.get("type").and_then(Value::as_str) {
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("number") => value.is_number(),
        Some("integer") => value.is_u64() || value.is_i64(),
        _ => true,
    }
}

/// The JSON type of a value, in words.
pub(crate) fn type_word(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
