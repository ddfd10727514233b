//! The JSON API: each route names a catalog operation and where its arguments come from (the
//! path, the query string, the JSON body); the operation's own argument type reads them, so an
//! answer or a problem is the same as from every other face. Seed 001's bundle API is here
//! exactly; everything else follows its style.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use axum::extract::Request;
use std::time::Duration;

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
use crate::operations::{self, Op, cap_to_a_page, name_flat_claim};
use crate::results::Shown;
use tokio::sync::Semaphore;

/// The longest a request waits for work (`claim-next` with `wait_seconds`).
const MAX_WAIT: Duration = Duration::from_secs(50);

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
#[derive(Clone, Debug)]
pub(super) struct Route {
    pub method: &'static str,
    /// Under `/api/v1`; `{name}` segments are the operation's arguments of that name.
    pub path: Cow<'static, str>,
    /// The catalog operation.
    pub op: &'static str,
    /// The OpenAPI `operationId`, when two routes share an operation.
    pub id: Option<&'static str>,
    pub shape: Shape,
}

const fn route(
    (method, path, op): (&'static str, &'static str, &'static str),
    id: Option<&'static str>,
    shape: Shape,
) -> Route {
    Route {
        method,
        path: Cow::Borrowed(path),
        op,
        id,
        shape,
    }
}

const fn own(method: &'static str, path: &'static str, op: &'static str) -> Route {
    route((method, path, op), None, Shape::Plain)
}

const fn claim(path: &'static str, op: &'static str) -> Route {
    route(("POST", path, op), None, Shape::Claim)
}

/// The operations served elsewhere than their command's name says ([`default_route`]): an
/// operation here is served at exactly the routes it has here.
const OWN_ROUTES: &[Route] = &[
    // Seed 001's bundle API, exactly.
    own("GET", "/bundles/shared/{token}", "bundle_by_token"),
    route(
        ("POST", "/bundles/{id}/import", "import_bundle"),
        Some("import_stored_bundle"),
        Shape::StoredBundle,
    ),
    own("POST", "/bundles/import", "import_bundle"),
    own("PATCH", "/bundles/{id}/visibility", "set_visibility"),
    own("POST", "/bundle-keys", "trust_bundle_keys"),
    // Seed 001's word for claiming (`{"agent_id": ...}`), answered with the claim.
    own("POST", "/handoffs/{id}/claim", "claim"),
    route(
        ("POST", "/handoffs/{id}/accept", "claim"),
        Some("accept_handoff"),
        Shape::Plain,
    ),
    own("POST", "/handoffs/claim-next", "claim_next"),
    // A task's step, settled with its claim like any handoff.
    claim("/handoffs/{handoff_id}/fail-step", "fail_step"),
    claim("/handoffs/{handoff_id}/escalate-step", "escalate_step"),
    claim(
        "/handoffs/{handoff_id}/resolve-escalation",
        "resolve_escalation",
    ),
    route(
        ("GET", "/handoffs/{handoff_id}/events", "events"),
        Some("handoff_events"),
        Shape::Plain,
    ),
    own("GET", "/events", "events"),
    own("GET", "/queue", "queue_counts"),
    own("POST", "/tasks/rerun", "rerun_task"),
    own("POST", "/protocol/initialize", "initialize"),
    own(
        "POST",
        "/conversations/{conversation_id}/messages",
        "append_messages",
    ),
    // Seed 001 §8: `POST /branches/task%2Ffix-oauth-token-refresh/verify`, the name one
    // URL-encoded segment.
    own("POST", "/branches/{branch}/verify", "verify"),
    own("GET", "/curation/events", "curation_events"),
];

/// Where each group's operations are served: `handoff task start` at `/tasks/{id}/start`. A
/// handoff's operation without a record (`stats`) and a verb without a group (`branches`)
/// are at the top.
const GROUP_PATHS: &[(&str, &str)] = &[
    ("task", "/tasks"),
    ("memory", "/memory"),
    ("session", "/sessions"),
    ("protocol", "/protocol"),
    ("conversation", "/conversations"),
    ("facts", "/facts"),
    ("bundle", "/bundles"),
];

/// An operation's route by its command's name: a record's verbs by their HTTP method (`create`
/// and `add` post to the collection, `list` gets it, `get` or `show`, `put`, `update` and
/// `delete` name the record by the first argument), a claim's operation at the claimed
/// handoff, a verb on a record (its first argument `id` or `<thing>_id`) at the record, any
/// other verb under the group; reads are `GET`, the rest `POST`.
fn default_route(op: &Op) -> Route {
    let (group, verb) = op.info.command.unwrap_or(("", op.name()));
    let verb = verb.replace('_', "-");
    let first = op.info.positional.first().copied().unwrap_or_default();
    let base = GROUP_PATHS
        .iter()
        .find(|(g, _)| *g == group)
        .map_or("", |(_, path)| path);
    // A record named by its id: `handoff_id` is a handoff's, `task_id` a task's; a bare `id`
    // is one of the group's own (a handoff's without a group).
    let record = match first.strip_suffix("_id") {
        Some(thing) if base.is_empty() => format!("/{thing}s/{{{first}}}"),
        Some(_) => format!("{base}/{{{first}}}"),
        None if first == "id" && base.is_empty() => "/handoffs/{id}".to_owned(),
        None => format!("{base}/{{{first}}}"),
    };
    let collection = if base.is_empty() { "/handoffs" } else { base };
    let (method, path, shape) = match verb.as_str() {
        "create" | "add" => ("POST", collection.to_owned(), Shape::Plain),
        "list" => ("GET", collection.to_owned(), Shape::Plain),
        "get" | "show" => ("GET", record, Shape::Plain),
        "put" => ("PUT", record, Shape::Plain),
        "update" => ("PATCH", record, Shape::Plain),
        "delete" => ("DELETE", record, Shape::Plain),
        _ if first == "claim" => (
            "POST",
            format!("{collection}/{{handoff_id}}/{verb}"),
            Shape::Claim,
        ),
        _ => {
            let method = if op.reads_only() { "GET" } else { "POST" };
            let on_record = first == "id" || first.ends_with("_id");
            let at = if on_record { record } else { base.to_owned() };
            (method, format!("{at}/{verb}"), Shape::Plain)
        }
    };
    Route {
        method,
        path: Cow::Owned(path),
        op: op.name(),
        id: None,
        shape,
    }
}

/// Every route: each operation's by its name, or its own ([`OWN_ROUTES`]).
pub(super) fn routes() -> &'static [Route] {
    static ROUTES: OnceLock<Vec<Route>> = OnceLock::new();
    ROUTES.get_or_init(|| {
        let mut routes = Vec::new();
        for op in operations::all() {
            let own = OWN_ROUTES.iter().filter(|r| r.op == op.name());
            if own.clone().next().is_none() {
                routes.push(default_route(op));
            }
            routes.extend(own.cloned());
        }
        routes
    })
}

impl Route {
    pub(super) fn op(&self) -> &'static Op {
        operations::find(self.op).unwrap_or_else(|| unreachable!("routes name catalog operations"))
    }

    /// The path's parameter names.
    pub(super) fn parameters(&self) -> impl Iterator<Item = &str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
    }

    /// Whether arguments come from the query string rather than a body.
    pub(super) fn reads_query(&self) -> bool {
        matches!(self.method, "GET" | "DELETE")
    }

    /// The path parameters' values, if `path` (under `/api/v1`) is this route's.
    fn matches(&self, path: &str) -> Option<Vec<(&str, String)>> {
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
    let candidates: Vec<(&'static Route, Vec<(&'static str, String)>)> = routes()
        .iter()
        .filter_map(|r| Some((r, r.matches(rest)?)))
        .collect();
    // A path's own words before a parameter: `/tasks/history` is not the task `history`.
    let Some((route, parameters)) = candidates
        .iter()
        .filter(|(r, _)| r.method == method.as_str())
        .min_by_key(|(_, parameters)| parameters.len())
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
    let answer = match operations::waits(route.op(), &args) {
        true => waiting(&app, route, args, handover).await,
        false => app
            .blocking(move |app| run(app, route, args, &handover, false))
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

/// How many requests may wait for work on the blocking threads at once; past this many, the
/// others wait their turn without holding a thread, so that waiting workers can never starve
/// the other requests.
const WAITING_AT_ONCE: usize = 64;

/// Runs a waiting `claim-next` on a blocking thread once one of [`WAITING_AT_ONCE`] is free,
/// until it has claimed something, its wait is over, its request is gone or the server is
/// stopping. Without a turn before its wait is over (or the server stops), it looks once,
/// without waiting, and answers.
async fn waiting(
    app: &Arc<App>,
    route: &'static Route,
    mut args: Map<String, Value>,
    handover: Handover,
) -> Result<(StatusCode, Value), Error> {
    static SLOTS: Semaphore = Semaphore::const_new(WAITING_AT_ONCE);
    let wait = args
        .get("wait_seconds")
        .and_then(Value::as_f64)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or_default();
    let asked = tokio::time::Instant::now();
    let slot = tokio::select! {
        slot = tokio::time::timeout(wait, SLOTS.acquire()) => slot.ok().and_then(Result::ok),
        () = app.stop.begun() => None,
    };
    let left = wait.saturating_sub(asked.elapsed());
    let waits = slot.is_some() && !app.stop.has_begun() && !left.is_zero();
    let left = if waits { left } else { Duration::ZERO };
    args.insert("wait_seconds".into(), json!(left.as_secs_f64()));
    let answer = app
        .blocking(move |app| run(app, route, args, &handover, waits))
        .await?;
    drop(slot);
    answer
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
        && wait > MAX_WAIT.as_secs_f64()
    {
        args.insert("wait_seconds".into(), json!(MAX_WAIT.as_secs_f64()));
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
pub(super) fn typed(schema: Option<&Value>, text: &str) -> Value {
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
/// `waits`: a `claim-next` that waits, a slice at a time, while its request is there and the
/// server is not stopping.
fn run(
    app: &App,
    route: &Route,
    mut args: Map<String, Value>,
    handover: &Handover,
    waits: bool,
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
        _ if waits => operations::claim_waiting(&app.store, args, MAX_WAIT, &mut || {
            app.stop.has_begun() || handover.gone()
        })?,
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
    let shown = Shown {
        op,
        outcome: &result,
        out: &app.out,
    };
    let mut body = shown.structured();
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
        for route in routes() {
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
    /// none so far. Any other operation of those groups needs a route ([`routes`]).
    const NOT_SERVED: &[(&str, &str)] = &[];

    #[test]
    fn every_task_step_and_protocol_operation_has_a_route() {
        let missing: Vec<&str> = handoff_core::ops::catalog()
            .iter()
            .filter(|op| matches!(op.command, Some(("task" | "step" | "protocol", _))))
            .map(|op| op.name)
            .filter(|name| NOT_SERVED.iter().all(|(exempt, _)| exempt != name))
            .filter(|name| routes().iter().all(|route| route.op != *name))
            .collect();
        assert!(
            missing.is_empty(),
            "no HTTP route serves {missing:?}: add one to OWN_ROUTES (or say why not in NOT_SERVED)"
        );
    }

    #[test]
    fn routes_default_from_the_command_name() {
        let route = |op: &str| {
            let route = default_route(operations::find(op).expect(op));
            format!("{} {}", route.method, route.path)
        };
        assert_eq!(route("start_task"), "POST /tasks/{id}/start");
        assert_eq!(route("memory_put"), "PUT /memory/{scope}");
        assert_eq!(route("heartbeat"), "POST /handoffs/{handoff_id}/heartbeat");
        assert_eq!(
            route("cherry_pick"),
            "POST /conversations/{conversation_id}/cherry-pick"
        );
        assert_eq!(route("chain"), "GET /tasks/{task_id}/chain");
        assert_eq!(route("stats"), "GET /stats");
        assert_eq!(route("protocol_run"), "GET /protocol/{task_id}");
        let unique: std::collections::BTreeSet<(&str, &str)> =
            routes().iter().map(|r| (r.method, &*r.path)).collect();
        assert_eq!(unique.len(), routes().len(), "a route twice");
    }

    #[test]
    fn routes_match_their_paths_only() {
        let get = routes()
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
