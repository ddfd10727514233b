//! The JSON API: each route names a catalog operation and where its arguments come from (the
//! path, the query string, the JSON body); the operation's own argument type reads them, so an
//! answer or a problem is the same as from every other face. Seed 001's bundle API is here
//! exactly; everything else follows its style.

use std::sync::Arc;

use axum::extract::Request;
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use handoff_core::{Error, ErrorKind, Limits};
use serde_json::{Map, Value, json};

use super::bodies::{self, MAX_BODY_BYTES};
use super::receipt::{Handover, Receipt};
use super::{App, Refusal, browsers, json_response, openapi, query_pairs};
use crate::credentials::{self, Agents};
use crate::error::CliError;
use crate::judge;
use crate::operations::{self, Op, asked_wait, cap_to_a_page, name_flat_claim};
use tokio::sync::Semaphore;

/// The longest a request waits for work (`claim-next` with `wait_seconds`).
const MAX_WAIT_SECONDS: f64 = 50.0;

/// How a route's request becomes the operation's arguments, beyond path, query and body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// The path's parameters, then the query string (reads) or the JSON body (changes).
    Plain,
    /// A claim's operation: `{handoff_id}` from the path and `token`, `secret` (or
    /// `claim_secret`, as the claim's answer calls it), `lease_seconds` from the body make
    /// the `claim` argument.
    Claim,
    /// The bundle `{id}` names, imported (`import_bundle` with its portable JSON; with
    /// `dry_run`, what importing it would add).
    StoredBundle,
}

/// One route.
#[derive(Clone, Copy, Debug)]
pub(super) struct Route {
    pub method: &'static str,
    /// Under `/api/v1`; `{name}` segments are the operation's arguments of that name.
    pub path: &'static str,
    /// The catalog operation.
    pub op: &'static str,
    /// The OpenAPI `operationId`, when two routes share an operation.
    pub id: Option<&'static str>,
    pub shape: Shape,
}

const fn route(method: &'static str, path: &'static str, op: &'static str) -> Route {
    Route {
        method,
        path,
        op,
        id: None,
        shape: Shape::Plain,
    }
}

const fn claim(path: &'static str, op: &'static str) -> Route {
    Route {
        method: "POST",
        path,
        op,
        id: None,
        shape: Shape::Claim,
    }
}

/// Every route, in the order the OpenAPI document lists them.
pub(super) const ROUTES: &[Route] = &[
    // Seed 001's bundle API, exactly.
    route("POST", "/bundles", "create_bundle"),
    route("GET", "/bundles", "list_bundles"),
    route("GET", "/bundles/{id}", "get_bundle"),
    route("GET", "/bundles/shared/{token}", "bundle_by_token"),
    Route {
        id: Some("import_stored_bundle"),
        shape: Shape::StoredBundle,
        ..route("POST", "/bundles/{id}/import", "import_bundle")
    },
    // The verification gate on the bundle's contents, by the server's --judge-cmd.
    route("POST", "/bundles/{id}/verify", "verify_bundle"),
    route("PATCH", "/bundles/{id}/visibility", "set_visibility"),
    route("POST", "/bundles/{id}/sign", "sign_bundle"),
    route("POST", "/bundle-keys", "trust_bundle_keys"),
    route("DELETE", "/bundles/{id}", "delete_bundle"),
    route("POST", "/bundles/import", "import_bundle"),
    // Handoffs.
    route("GET", "/handoffs", "list"),
    route("POST", "/handoffs", "create"),
    route("POST", "/handoffs/claim-next", "claim_next"),
    route("GET", "/handoffs/{id}", "get"),
    route("POST", "/handoffs/{id}/claim", "claim"),
    // Seed 001's word for claiming (`{"agent_id": ...}`), answered with the claim.
    Route {
        id: Some("accept_handoff"),
        ..route("POST", "/handoffs/{id}/accept", "claim")
    },
    claim("/handoffs/{handoff_id}/heartbeat", "heartbeat"),
    claim("/handoffs/{handoff_id}/complete", "complete"),
    claim("/handoffs/{handoff_id}/release", "release"),
    claim("/handoffs/{handoff_id}/fail", "fail"),
    // A task's step, settled with its claim like any handoff.
    claim("/handoffs/{handoff_id}/fail-step", "fail_step"),
    claim("/handoffs/{handoff_id}/escalate-step", "escalate_step"),
    claim(
        "/handoffs/{handoff_id}/resolve-escalation",
        "resolve_escalation",
    ),
    route("POST", "/handoffs/{id}/reject", "reject"),
    route("POST", "/handoffs/{id}/cancel", "cancel"),
    Route {
        id: Some("handoff_events"),
        ..route("GET", "/handoffs/{handoff_id}/events", "events")
    },
    route("GET", "/handoffs/{handoff_id}/context", "context_for"),
    route("GET", "/events", "events"),
    route("GET", "/stats", "stats"),
    route("GET", "/queue", "queue_counts"),
    route("GET", "/stalled", "stalled"),
    route("POST", "/reap", "reap"),
    route("GET", "/capabilities", "capabilities"),
    route("POST", "/check", "check"),
    // Tasks.
    route("GET", "/tasks", "list_tasks"),
    route("POST", "/tasks", "create_task"),
    route("GET", "/tasks/history", "task_history"),
    route("GET", "/tasks/statistics", "task_statistics"),
    route("GET", "/tasks/compare", "compare"),
    route("POST", "/tasks/prune", "prune"),
    route("POST", "/tasks/rerun", "rerun_task"),
    route("GET", "/tasks/{id}", "get_task"),
    route("PATCH", "/tasks/{id}", "update_task"),
    route("POST", "/tasks/{id}/start", "start_task"),
    route("POST", "/tasks/{id}/pause", "pause_task"),
    route("POST", "/tasks/{id}/resume", "resume_task"),
    route("POST", "/tasks/{id}/cancel", "cancel_task"),
    // Seed 001 §8's `POST /tasks/{id}/join`, `/complete` and the way a task fails.
    route("POST", "/tasks/{id}/join", "join_task"),
    route("POST", "/tasks/{id}/complete", "complete_task"),
    route("POST", "/tasks/{id}/fail", "fail_task"),
    route("GET", "/tasks/{id}/events", "task_events"),
    route("GET", "/tasks/{task_id}/chain", "chain"),
    route("GET", "/tasks/{task_id}/replay", "replay"),
    // The manager/worker protocol.
    route("POST", "/protocol/initialize", "initialize"),
    claim("/protocol/{handoff_id}/report", "report"),
    claim("/protocol/{handoff_id}/decide", "decide"),
    claim("/protocol/{handoff_id}/report-error", "report_error"),
    claim("/protocol/{handoff_id}/recover", "recover"),
    claim("/protocol/{handoff_id}/escalate", "escalate"),
    claim("/protocol/{handoff_id}/resolve", "resolve"),
    route("GET", "/protocol/stats", "protocol_stats"),
    route("GET", "/protocol/{task_id}", "protocol_run"),
    route("GET", "/protocol/{task_id}/history", "protocol_history"),
    // Conversations and curated knowledge.
    route("GET", "/conversations", "list_conversations"),
    route("POST", "/conversations", "add_conversation"),
    route("GET", "/conversations/{id}", "get_conversation"),
    route("GET", "/conversations/{id}/messages", "messages"),
    route(
        "POST",
        "/conversations/{conversation_id}/messages",
        "append_messages",
    ),
    route(
        "POST",
        "/conversations/{conversation_id}/cherry-pick",
        "cherry_pick",
    ),
    route(
        "POST",
        "/conversations/{conversation_id}/cherry-pick-decisions",
        "cherry_pick_decisions",
    ),
    route(
        "POST",
        "/conversations/{conversation_id}/cherry-pick-tools",
        "cherry_pick_tools",
    ),
    route(
        "POST",
        "/conversations/{conversation_id}/cherry-pick-to-facts",
        "cherry_pick_to_facts",
    ),
    route("GET", "/branches", "branches"),
    // Seed 001 §8: `POST /branches/task%2Ffix-oauth-token-refresh/verify`, the name one
    // URL-encoded segment.
    route("POST", "/branches/{branch}/verify", "verify"),
    route("GET", "/facts", "facts"),
    route("POST", "/facts", "add_facts"),
    route("POST", "/merge", "merge"),
    route("GET", "/curation/events", "curation_events"),
    // Memory and sessions.
    route("GET", "/memory", "memory_list"),
    route("GET", "/memory/{scope}", "memory_get"),
    route("PUT", "/memory/{scope}", "memory_put"),
    route("DELETE", "/memory/{scope}", "memory_delete"),
    route("GET", "/sessions/{session_id}", "session"),
];

impl Route {
    pub(super) fn op(&self) -> &'static Op {
        operations::find(self.op).unwrap_or_else(|| unreachable!("routes name catalog operations"))
    }

    /// The path's parameter names.
    pub(super) fn parameters(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
    }

    /// Whether arguments come from the query string rather than a body.
    pub(super) fn reads_query(&self) -> bool {
        matches!(self.method, "GET" | "DELETE")
    }

    /// The path parameters' values, if `path` (under `/api/v1`) is this route's.
    fn matches(&self, path: &str) -> Option<Vec<(&'static str, String)>> {
        let mut template = self.path.split('/');
        let mut given = path.split('/');
        let mut found = Vec::new();
        loop {
            match (template.next(), given.next()) {
                (None, None) => return Some(found),
                (Some(t), Some(g)) => match t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                    Some(name) if !g.is_empty() => found.push((name, super::path_segment(g))),
                    Some(_) => return None,
                    None if t == g => {}
                    None => return None,
                },
                _ => return None,
            }
        }
    }
}

/// An API request to its answer, made by a caller acting as `caller`.
pub(super) async fn handle(app: Arc<App>, request: Request, caller: Agents) -> Response {
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let rest = path.strip_prefix("/api/v1").unwrap_or_default();
    if rest == "/openapi.json" && request.method() == Method::GET {
        return json_response(StatusCode::OK, openapi::document());
    }
    let method = request.method().clone();
    let candidates: Vec<(&Route, Vec<(&'static str, String)>)> = ROUTES
        .iter()
        .filter_map(|r| Some((r, r.matches(rest)?)))
        .collect();
    let Some((route, parameters)): Option<(&'static Route, _)> = candidates
        .iter()
        .find(|(r, _)| r.method == method.as_str())
        .cloned()
    else {
        return if candidates.is_empty() {
            problem(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &format!("no route is {path}"),
            )
        } else {
            let allowed: Vec<&str> = candidates.iter().map(|(r, _)| r.method).collect();
            let mut response = problem(
                StatusCode::METHOD_NOT_ALLOWED,
                "VALIDATION",
                &format!("{path} takes {}, not {method}", allowed.join(", ")),
            );
            if let Ok(allow) = HeaderValue::from_str(&allowed.join(", ")) {
                response.headers_mut().insert(header::ALLOW, allow);
            }
            response
        };
    };
    let query = request.uri().query().unwrap_or_default().to_owned();
    // A read takes its arguments from the query string: a body it carries is not read.
    let (parts, body) = request.into_parts();
    let body = if route.reads_query() {
        None
    } else {
        let read = match browsers::json_body(&parts.headers) {
            Ok(()) => bodies::read(body, &parts.headers, app.body_timeout).await,
            Err(refusal) => Err(refusal),
        };
        match read {
            Ok(read) => Some(read),
            Err(refusal) => return refused(&refusal),
        }
    };
    let bytes = body.as_ref().map_or(&[][..], |read| &read.bytes[..]);
    let limits = app.store.limits().clone();
    let args = match arguments(route, parameters, &query, bytes, &limits) {
        Ok(args) => args,
        Err(e) => return failure(&app, &e.into()),
    };
    // Who the caller says it is, against who its token says it may be (`--credentials`).
    if let Err(e) = credentials::check(route.op(), &args, &caller) {
        return failure(&app, &e);
    }
    let receipt = Receipt::new(&app);
    let handover = receipt.handover();
    let answer = match asked_wait(&args) {
        Some(wait) => waiting(&app, route, args, wait, &handover).await,
        None => app
            .blocking(move |app| run(app, route, args, &handover))
            .await
            .and_then(|answer| answer),
    };
    receipt.received();
    // The body's share of what may be buffered at once is given back with the answer.
    drop(body);
    match answer {
        Ok((status, body)) => json_response(status, &body),
        // A claim given in the body is named by its own fields, as the caller gave them.
        Err(e) if route.shape == Shape::Claim => failure(&app, &name_flat_claim(e).into()),
        Err(e) => failure(&app, &e.into()),
    }
}

/// How many requests may wait for work on the blocking threads at once. A waiting request
/// takes one for a slice of its wait at most; past this many, the others wait their turn
/// without holding a thread, so that waiting workers can never starve the other requests.
const WAITING_AT_ONCE: usize = 64;
/// The longest slice of a wait spent on a blocking thread.
const WAIT_SLICE: Duration = Duration::from_secs(1);

/// Runs a waiting `claim-next` a slice at a time, each slice on a blocking thread when one of
/// [`WAITING_AT_ONCE`] is free, until it has claimed something, its wait is over or the server
/// is stopping (then it looks once more, without waiting, and answers).
async fn waiting(
    app: &Arc<App>,
    route: &'static Route,
    mut args: Map<String, Value>,
    wait: Duration,
    handover: &Handover,
) -> Result<(StatusCode, Value), Error> {
    static SLOTS: Semaphore = Semaphore::const_new(WAITING_AT_ONCE);
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let slot = tokio::select! {
            slot = tokio::time::timeout(left, SLOTS.acquire()) => slot.ok(),
            () = app.stop.begun() => None,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let slice = match slot {
            Some(_) if !app.stop.has_begun() => left.min(WAIT_SLICE),
            _ => Duration::ZERO,
        };
        args.insert("wait_seconds".into(), json!(slice.as_secs_f64()));
        let asked = args.clone();
        let handover = handover.clone();
        let (status, body) = app
            .blocking(move |app| run(app, route, asked, &handover))
            .await??;
        drop(slot);
        let claimed = body.get("handoff_id").is_some();
        if claimed || slice >= left || app.stop.has_begun() {
            return Ok((status, body));
        }
    }
}

/// The operation's arguments from the path, the query string or the body, and the route's shape.
fn arguments(
    route: &Route,
    parameters: Vec<(&'static str, String)>,
    query: &str,
    body: &[u8],
    limits: &Limits,
) -> Result<Map<String, Value>, Error> {
    let op = route.op();
    let mut args = if route.reads_query() {
        let mut args = Map::new();
        for (name, text) in query_pairs(query) {
            let value = typed(op.argument(&name), &text);
            args.insert(name, value);
        }
        args
    } else {
        body_object(body, limits)?
    };
    for (name, value) in parameters {
        if route.shape == Shape::Claim && name == "handoff_id" {
            let mut claim = Map::new();
            claim.insert("handoff_id".into(), Value::String(value));
            // `claim_secret` is what a claim's answer calls the secret.
            for (given, field) in [
                ("token", "token"),
                ("secret", "secret"),
                ("claim_secret", "secret"),
                ("lease_seconds", "lease_seconds"),
            ] {
                if let Some(v) = args.remove(given) {
                    claim.insert(field.into(), v);
                }
            }
            args.insert("claim".into(), Value::Object(claim));
        } else {
            args.insert(name.into(), Value::String(value));
        }
    }
    if route.op == "claim_next"
        && let Some(wait) = args.get("wait_seconds").and_then(Value::as_f64)
        && wait > MAX_WAIT_SECONDS
    {
        args.insert("wait_seconds".into(), json!(MAX_WAIT_SECONDS));
    }
    if op.is_paged() {
        cap_to_a_page(&mut args);
    }
    Ok(args)
}

/// A request body: a JSON object (an empty body is `{}`), checked for size and nesting before
/// it is parsed.
fn body_object(body: &[u8], limits: &Limits) -> Result<Map<String, Value>, Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let text = std::str::from_utf8(body).map_err(|_| Error::invalid("body", "must be UTF-8"))?;
    let room = Limits {
        max_record_bytes: MAX_BODY_BYTES,
        // The arguments' own object around what the store allows.
        max_depth: limits.max_depth + 2,
        ..limits.clone()
    };
    handoff_core::validate::check_json_text("body", text, &room)?;
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::invalid(
            "body",
            "must be a JSON object of named arguments",
        )),
        Err(e) => Err(Error::invalid("body", format!("must be JSON: {e}"))),
    }
}

/// A query parameter as the argument's type says: a number, a boolean or text. What does not
/// read as its type goes as text, for the operation to report by name.
fn typed(schema: Option<&Value>, text: &str) -> Value {
    let types: Vec<&str> = match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let number = |t: &str| types.contains(&t);
    if number("integer")
        && let Ok(n) = text.parse::<i64>()
    {
        return json!(n);
    }
    if number("number")
        && let Ok(n) = text.parse::<f64>()
        && n.is_finite()
    {
        return json!(n);
    }
    if number("boolean") && matches!(text, "true" | "false") {
        return json!(text == "true");
    }
    Value::String(text.to_owned())
}

/// Runs the route's operation (blocking): its status and JSON answer. A claim it makes is
/// offered to the request through `handover`, which gives it back if the request is gone.
fn run(
    app: &App,
    route: &Route,
    mut args: Map<String, Value>,
    handover: &Handover,
) -> Result<(StatusCode, Value), Error> {
    let op = route.op();
    if route.shape == Shape::StoredBundle {
        let id = args.remove("id").unwrap_or_default();
        let id = id.as_str().unwrap_or_default();
        let bundle = app.store.get_bundle(id)?;
        args.insert("bundle".into(), Value::String(bundle.to_json()?));
    }
    let page = op
        .is_paged()
        .then(|| args.get("limit").and_then(Value::as_u64))
        .flatten();
    let judged = judge::JUDGED.contains(&op.name());
    let result = match &app.judge {
        Some(judge) if judged => {
            judge::run_with_command(&app.store, op.name(), Value::Object(args), judge)?
        }
        // A branch verified by nobody would be scored the neutral 0.5 in silence: refused.
        None if op.name() == "verify" => {
            return Err(Error::invalid(
                "judge_cmd",
                "this server has no judge to verify with: start it with --judge-cmd CMD",
            ));
        }
        _ => op.call(&app.store, Value::Object(args))?,
    };
    if let Some(claim) = result.claim()
        && !handover.offer(&app.store, claim)
    {
        return Err(Error::invalid(
            "request",
            "its client was gone before the answer",
        ));
    }
    let mut body = result.structured(&app.out, op.reads_only());
    if let (Some(page), Some((count, Some(last)))) = (page, result.extent())
        && count as u64 == page
    {
        body["next_after"] = last;
    }
    let status = if route.method == "POST" && op.may_create() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, body))
}

/// The HTTP status of an error kind.
pub(super) fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::Validation => StatusCode::BAD_REQUEST,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::AlreadyClaimed
        | ErrorKind::LeaseLost
        | ErrorKind::Conflict
        | ErrorKind::InvalidTransition
        | ErrorKind::ChainViolation => StatusCode::CONFLICT,
        ErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error as every face shows it (`{"error": {"code", "message", ...}}`, redacted).
fn failure(app: &App, e: &CliError) -> Response {
    let status = match e {
        CliError::Core(e) => status(e.kind()),
        CliError::MissingStore(_) => StatusCode::INTERNAL_SERVER_ERROR,
        CliError::Forbidden { .. } => StatusCode::FORBIDDEN,
        CliError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
    };
    let mut response = json_response(status, &e.shown_json(&app.out));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("1"));
    }
    response
}

/// An error of the HTTP layer, in the same form.
fn problem(status: StatusCode, code: &str, message: &str) -> Response {
    json_response(
        status,
        &json!({ "error": { "code": code, "message": message } }),
    )
}

/// A request the HTTP layer refused (`Host`, `Origin`, `Content-Type`, the body's size or
/// deadline), in the same form, naming what was refused and the rule. The connection is closed
/// after it: what is left of the request is not read.
pub(super) fn refused(refusal: &Refusal) -> Response {
    let mut response = json_response(
        refusal.status,
        &json!({ "error": {
            "code": refusal.code,
            "message": refusal.message(),
            "problems": [{ "field": refusal.field, "rule": refusal.rule }],
        } }),
    );
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if refusal.status == StatusCode::SERVICE_UNAVAILABLE {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// No or the wrong bearer token.
pub(super) fn unauthorized() -> Response {
    let mut response = problem(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        "this server needs `Authorization: Bearer <token>`",
    );
    response.headers_mut().insert(
        "www-authenticate",
        axum::http::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_names_an_operation_and_its_parameters_are_its_arguments() {
        for route in ROUTES {
            let op = operations::find(route.op).expect(route.op);
            for name in route.parameters() {
                let known = op.argument(name).is_some()
                    || (route.shape == Shape::Claim && name == "handoff_id")
                    || (route.shape == Shape::StoredBundle && name == "id");
                assert!(
                    known,
                    "{} {}: {name} is not an argument of {}",
                    route.method, route.path, route.op
                );
            }
        }
    }

    /// Task, step and protocol operations served without a route of their own, each with why:
    /// none so far. Any other operation of those groups needs a route in [`ROUTES`].
    const NOT_SERVED: &[(&str, &str)] = &[];

    #[test]
    fn every_task_step_and_protocol_operation_has_a_route() {
        let missing: Vec<&str> = handoff_core::ops::catalog()
            .iter()
            .filter(|op| matches!(op.command, Some(("task" | "step" | "protocol", _))))
            .map(|op| op.name)
            .filter(|name| NOT_SERVED.iter().all(|(exempt, _)| exempt != name))
            .filter(|name| ROUTES.iter().all(|route| route.op != *name))
            .collect();
        assert!(
            missing.is_empty(),
            "no HTTP route serves {missing:?}: add one to ROUTES (or say why not in NOT_SERVED)"
        );
    }

    #[test]
    fn routes_match_their_paths_only() {
        let get = ROUTES
            .iter()
            .find(|r| r.path == "/bundles/shared/{token}")
            .expect("route");
        assert_eq!(
            get.matches("/bundles/shared/kb_1"),
            Some(vec![("token", "kb_1".to_owned())])
        );
        assert_eq!(get.matches("/bundles/shared"), None);
        assert_eq!(get.matches("/bundles/shared/"), None);
        assert_eq!(get.matches("/bundles/shared/a/b"), None);
    }

    #[test]
    fn query_values_take_their_argument_types() {
        let limit = json!({"type": ["integer", "null"]});
        assert_eq!(typed(Some(&limit), "10"), json!(10));
        assert_eq!(typed(Some(&limit), "ten"), json!("ten"));
        assert_eq!(
            typed(Some(&json!({"type": "boolean"})), "true"),
            json!(true)
        );
        assert_eq!(typed(None, "7"), json!("7"));
    }
}
