//! The API's OpenAPI 3.1 document, generated from the route table and each operation's
//! argument schema (the core's, as every face reads it): nothing about an argument is written
//! twice.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::api::{Route, Shape, routes};

/// The document, built once.
pub(super) fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

fn build() -> Value {
    let mut schemas = Map::new();
    let mut paths = Map::new();
    for route in routes() {
        let operation = operation(route, &mut schemas);
        let path = format!("/api/v1{}", route.path);
        let item = paths
            .entry(path)
            .or_insert_with(|| Value::Object(Map::new()));
        item[route.method.to_lowercase()] = operation;
    }
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "description": "VALIDATION, NOT_FOUND, ALREADY_CLAIMED, LEASE_LOST, CONFLICT, VERSION_CONFLICT, INVALID_TRANSITION, CHAIN_VIOLATION, BUSY, STORAGE, UNAUTHORIZED or FORBIDDEN: the same codes as every other face, and the HTTP layer's own two"},
                    "message": {"type": "string"},
                    "problems": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"field": {"type": "string"}, "rule": {"type": "string"}}
                    }}
                }
            }}
        }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "handoff-core",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The handoff store over HTTP (`handoff serve`): the same operations, arguments, errors and redaction as the library, the CLI and the MCP server. Seed 001's bundle API is under /api/v1/bundles.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
    })
}

fn operation(route: &Route, schemas: &mut Map<String, Value>) -> Value {
    let op = route.op();
    let arguments = hoisted(&op.info.arguments, schemas);
    let properties = arguments
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: BTreeSet<String> = arguments
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let in_path: Vec<&str> = route.parameters().collect();
    let mut parameters: Vec<Value> = in_path
        .iter()
        .map(|name| {
            let schema = properties
                .get(*name)
                .cloned()
                .unwrap_or_else(|| json!({"type": "string"}));
            json!({"name": name, "in": "path", "required": true, "schema": schema})
        })
        .collect();
    // What the caller gives besides the path: the operation's arguments, reshaped.
    let mut given: Map<String, Value> = properties
        .into_iter()
        .filter(|(name, _)| !in_path.contains(&name.as_str()))
        .collect();
    let mut needed: Vec<String> = required
        .iter()
        .filter(|name| !in_path.contains(&name.as_str()))
        .cloned()
        .collect();
    // An argument's other names (an older spelling, or a seed's name: `x-aliases`) are
    // documented beside it as deprecated, so that a request written with them is one the
    // document allows; a required one is then required under one of its names.
    let mut one_of_names: Vec<Vec<String>> = Vec::new();
    for (name, schema) in given.clone() {
        let aliases: Vec<String> = schema
            .get("x-aliases")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        if aliases.is_empty() {
            continue;
        }
        for alias in &aliases {
            let mut other = schema.clone();
            other["description"] = json!(format!(
                "The same as `{name}`, by another name: give one or the other."
            ));
            other["deprecated"] = json!(true);
            if let Some(map) = other.as_object_mut() {
                map.remove("x-aliases");
            }
            given.insert(alias.clone(), other);
        }
        if needed.contains(&name) {
            needed.retain(|n| *n != name);
            one_of_names.push(std::iter::once(name).chain(aliases).collect());
        }
    }
    match route.shape {
        Shape::Plain => {}
        Shape::Claim => {
            let claim = given
                .remove("claim")
                .map(|c| claim_fields(&c, schemas))
                .unwrap_or_default();
            needed.retain(|name| name != "claim");
            given.extend(claim);
            needed.push("token".to_owned());
        }
        Shape::StoredBundle => {
            given.retain(|name, _| name == "target_branch" || name == "dry_run");
            needed.clear();
        }
    }
    let description = op.info.description();
    let mut operation = json!({
        "operationId": route.id.unwrap_or(op.info.name),
        "summary": description.split(". ").next().unwrap_or_default().trim_end_matches('.'),
        "description": description,
        "responses": responses(route),
    });
    if route.reads_query() {
        parameters.extend(given.into_iter().map(|(name, schema)| {
            let mut parameter = json!({"name": name, "in": "query", "required": needed.contains(&name), "schema": schema});
            if schema.get("deprecated") == Some(&json!(true)) {
                parameter["deprecated"] = json!(true);
            }
            parameter
        }));
    } else {
        let mut body =
            json!({"type": "object", "properties": given, "additionalProperties": false});
        if !needed.is_empty() {
            body["required"] = json!(needed);
        }
        if route.shape == Shape::Claim {
            // The secret by either name.
            one_of_names.push(vec!["secret".to_owned(), "claim_secret".to_owned()]);
        }
        let either = |names: &Vec<String>| {
            json!(
                names
                    .iter()
                    .map(|n| json!({"required": [n]}))
                    .collect::<Vec<_>>()
            )
        };
        match one_of_names.as_slice() {
            [] => {}
            [names] => body["anyOf"] = either(names),
            all => {
                body["allOf"] = json!(
                    all.iter()
                        .map(|names| json!({"anyOf": either(names)}))
                        .collect::<Vec<_>>()
                );
            }
        }
        operation["requestBody"] = json!({
            "required": !needed.is_empty() || !one_of_names.is_empty(),
            "content": {"application/json": {"schema": body}},
        });
    }
    if !parameters.is_empty() {
        operation["parameters"] = Value::Array(parameters);
    }
    operation
}

/// A claim's fields other than the handoff (which the path names), from the core's schema of
/// the `claim` argument, with `claim_secret`, the claim answer's name for the secret, beside
/// `secret`.
fn claim_fields(claim: &Value, schemas: &Map<String, Value>) -> Map<String, Value> {
    let schema = claim
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .and_then(|name| schemas.get(name))
        .unwrap_or(claim);
    let mut fields: Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(name, _)| *name != "handoff_id")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    if let Some(secret) = fields.get("secret").cloned() {
        fields.insert("claim_secret".into(), secret);
    }
    fields
}

fn responses(route: &Route) -> Value {
    let error = json!({"$ref": "#/components/schemas/Error"});
    let error = |text: &str| json!({"description": text, "content": {"application/json": {"schema": error}}});
    let ok = if route.method == "POST" && route.op().may_create() {
        "201"
    } else {
        "200"
    };
    let mut responses = json!({
        ok: {"description": "The operation's answer, as the MCP tool's structured content.",
             "content": {"application/json": {"schema": {"type": "object"}}}},
        "400": error("Bad input: every problem at once, each naming its field and rule."),
        "401": error("A bearer token is required and was missing or wrong."),
        "403": error("The request's Host is not this server's, or its Origin is another site's or port's (FORBIDDEN, naming host or origin); or, on a server with --credentials, an argument names an agent acting that the caller's token may not act as (FORBIDDEN, naming the argument)."),
        "404": error("Nothing has that id (or no route has that path)."),
        "405": error("The path does not take that method."),
        "409": error("The record is not in a state that allows it (claimed, lease lost, conflict, chain policy)."),
        "503": error("Another writer held the store's lock too long, or other requests' bodies filled the server's room for them; nothing changed, retry."),
    });
    if !route.reads_query() {
        responses["408"] = error(
            "The body did not arrive whole within the server's idle timeout of the request's head.",
        );
        responses["413"] =
            error("The body is, or was announced as, longer than the limit the message names.");
        responses["415"] = error("The body is not application/json.");
    }
    responses
}

/// `schema` with its `$defs` moved into `schemas` and its references pointed there.
fn hoisted(schema: &Value, schemas: &mut Map<String, Value>) -> Value {
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            let def = repointed(def);
            schemas.entry(name.clone()).or_insert(def);
        }
    }
    let mut schema = repointed(schema);
    if let Some(map) = schema.as_object_mut() {
        map.remove("$defs");
        map.remove("$schema");
    }
    schema
}

fn repointed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => (
                        k.clone(),
                        Value::String(r.replace("#/$defs/", "#/components/schemas/")),
                    ),
                    _ => (k.clone(), repointed(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(repointed).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_route_takes_the_claim_in_its_body() {
        let complete = &document()["paths"]["/api/v1/handoffs/{handoff_id}/complete"]["post"];
        let body = &complete["requestBody"]["content"]["application/json"]["schema"];
        for field in ["token", "secret", "claim_secret", "outcome"] {
            assert!(body["properties"].get(field).is_some(), "{field}: {body}");
        }
        assert!(body["properties"].get("claim").is_none());
        assert_eq!(body["required"], json!(["token"]));
    }

    #[test]
    fn operation_ids_are_unique_and_every_reference_resolves() {
        let doc = document();
        let mut ids = BTreeSet::new();
        for item in doc["paths"].as_object().expect("paths").values() {
            for op in item.as_object().expect("item").values() {
                let id = op["operationId"].as_str().expect("operationId");
                assert!(ids.insert(id.to_owned()), "{id} twice");
            }
        }
        let text = doc.to_string();
        for reference in text.split("\"#/components/schemas/").skip(1) {
            let name = reference.split('"').next().expect("name");
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "{name} is missing"
            );
        }
        assert!(!text.contains("#/$defs/"));
    }
}
