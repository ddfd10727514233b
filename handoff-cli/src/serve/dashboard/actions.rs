//! `POST /actions/<operation>`: a dashboard form, run as the catalog operation it names with
//! the form's fields as the operation's arguments (typed by its argument schema, as the API
//! types a query string), the session's agent as the one acting (`by`), and the same
//! credentials check as the API. Then back to the page with a message (`303 See Other`), or
//! the page again with the error as the core gave it.
//!
//! Before anything runs: the request's `Origin` is this server's (`serve::handle`), the
//! browser does not say it came from another site, and the form carries its session's token
//! ([`super::forms`]).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use handoff_core::Error;
use serde_json::{Map, Value, json};

use super::super::{App, Refusal, api, bodies};
use super::forms::{self, BACK_FIELD, CSRF_FIELD, Session};
use crate::credentials::{self, Agents};
use crate::error::CliError;
use crate::operations::{self, Op};

/// An action of the dashboard: the catalog operation it runs and what the page says once it
/// is done.
pub(super) struct Action {
    pub op: &'static str,
    pub done: &'static str,
    /// A claim is taken first, as the handoff's addressee, and given to the operation (an
    /// escalation is answered by whoever holds it).
    pub claims: bool,
    /// `by` names the handoff's creator rather than the session's agent: the core lets only
    /// the creator cancel a handoff by name. The session must be allowed to act as it, and
    /// the reason says who did.
    pub as_creator: bool,
}

const fn action(op: &'static str, done: &'static str) -> Action {
    Action {
        op,
        done,
        claims: false,
        as_creator: false,
    }
}

/// Every action a form may post. An operation this build's catalog lacks has no form and is
/// refused here.
pub(super) const ACTIONS: &[Action] = &[
    action("retry", "Back in the queue"),
    action("revoke_claim", "Claim released"),
    Action {
        op: "cancel",
        done: "Cancelled",
        claims: false,
        as_creator: true,
    },
    action("set_priority", "Priority changed"),
    action("pause_task", "Task paused"),
    action("resume_task", "Task resumed"),
    action("cancel_task", "Task cancelled"),
    action("import_bundle", "Bundle imported"),
    Action {
        op: "resolve_escalation",
        done: "Escalation resolved",
        claims: true,
        as_creator: false,
    },
    Action {
        op: "resolve",
        done: "Escalation resolved",
        claims: true,
        as_creator: false,
    },
];

/// The action named `op`, if a form may post it.
pub(super) fn find(op: &str) -> Option<&'static Action> {
    ACTIONS.iter().find(|a| a.op == op)
}

/// A posted form, by a caller acting as `caller`.
pub(in crate::serve) async fn act(app: Arc<App>, request: Request, caller: Agents) -> Response {
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let (parts, body) = request.into_parts();
    if let Some(rule) = forms::cross_site(&parts.headers) {
        return super::refused(&app, &Refusal::forbidden("sec-fetch-site", rule));
    }
    let read = match bodies::read(body, &parts.headers, app.body_timeout).await {
        Ok(read) => read,
        Err(refusal) => return super::refused(&app, &refusal),
    };
    let fields = match forms::fields(&parts.headers, &read.bytes) {
        Ok(fields) => fields,
        Err(e) => {
            return super::refused(
                &app,
                &Refusal::invalid(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "content-type",
                    e.to_string(),
                ),
            );
        }
    };
    drop(read);
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if !Session::accepts(&parts.headers, field(CSRF_FIELD).unwrap_or_default()) {
        return super::refused(
            &app,
            &Refusal::forbidden(
                "csrf",
                "must be the form token of this dashboard session, sent with the form: a page \
                 of another site cannot know it, and the session's cookie alone never acts"
                    .to_owned(),
            ),
        );
    }
    let back = forms::back(field(BACK_FIELD));
    let Some(action) = path.strip_prefix("/actions/").and_then(find) else {
        let e = Error::NotFound {
            what: "action",
            id: path.clone(),
        };
        return super::page(
            &app,
            &back,
            "",
            &parts.headers,
            &caller,
            Some(Err(e.into())),
        )
        .await;
    };
    let session = Session::of(&parts.headers, &caller);
    let acting = session.acting.clone();
    let who = caller.clone();
    let outcome = app
        .blocking(move |app| run(app, action, fields, &acting, &who))
        .await
        .map_err(CliError::from)
        .and_then(|outcome| outcome);
    match outcome {
        Ok(id) => {
            let mut location = format!("{back}?done={}", action.op);
            if !id.is_empty() {
                location.push_str("&id=");
                location.extend(form_urlencoded::byte_serialize(id.as_bytes()));
            }
            let mut response = StatusCode::SEE_OTHER.into_response();
            if let Ok(value) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, value);
            }
            response
        }
        Err(e) => super::page(&app, &back, "", &parts.headers, &caller, Some(Err(e))).await,
    }
}

/// Runs `action` with the form's `fields`: the id of the record or task it acted on.
fn run(
    app: &App,
    action: &Action,
    fields: Vec<(String, String)>,
    acting: &str,
    caller: &Agents,
) -> Result<String, CliError> {
    let op = operations::find(action.op).ok_or_else(|| Error::NotFound {
        what: "operation",
        id: action.op.to_owned(),
    })?;
    let mut args = Map::new();
    for (name, value) in fields {
        // The form's own fields, and an empty optional field (nothing typed in it).
        if [CSRF_FIELD, BACK_FIELD, "do"].contains(&name.as_str()) || value.trim().is_empty() {
            continue;
        }
        let typed = api::typed(op.argument(&name), &value);
        args.insert(name, typed);
    }
    // Who acts is the session's agent, whatever the form says.
    if op.argument("by").is_some() {
        args.insert("by".into(), Value::String(acting.to_owned()));
    }
    let id = ["id", "handoff_id"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    if action.as_creator
        && let Some(creator) = app.store.get(&id)?.from_agent
    {
        let said = args
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let reason = match said.trim() {
            "" => format!("by {acting}, from the dashboard"),
            said => format!("{said} (by {acting}, from the dashboard)"),
        };
        args.insert("by".into(), Value::String(creator));
        args.insert("reason".into(), Value::String(reason));
    }
    if action.claims {
        return answer(app, op, args, acting, caller).map(|()| id);
    }
    credentials::check(op, &args, caller)?;
    op.call(&app.store, Value::Object(args))?;
    Ok(id)
}

/// An escalation answered: claimed as its addressee (whom the session must be allowed to act
/// as), then answered with that claim by `op`; given back if the answer is refused.
fn answer(
    app: &App,
    op: &'static Op,
    mut args: Map<String, Value>,
    acting: &str,
    caller: &Agents,
) -> Result<(), CliError> {
    let id = match args.remove("handoff_id") {
        Some(Value::String(id)) => id,
        _ => return Err(Error::invalid("handoff_id", "must name the escalation").into()),
    };
    let record = app.store.get(&id)?;
    let agent = record.to_agent.clone().unwrap_or_else(|| acting.to_owned());
    let claim_op = operations::find("claim").ok_or_else(|| Error::NotFound {
        what: "operation",
        id: "claim".to_owned(),
    })?;
    let claim_args = json!({ "id": id, "agent": agent });
    if let Value::Object(claim_args) = &claim_args {
        credentials::check(claim_op, claim_args, caller)?;
    }
    let claimed = claim_op.call(&app.store, claim_args)?;
    let claim = claimed
        .claim()
        .ok_or_else(|| Error::storage("claim returned no claim"))?;
    let held = json!({
        "handoff_id": id,
        "token": claim.token,
        "secret": claim.secret.expose(),
    });
    args.insert("claim".into(), held.clone());
    let answered = credentials::check(op, &args, caller).and_then(|()| {
        op.call(&app.store, Value::Object(args))
            .map_err(CliError::from)
    });
    if let Err(e) = answered {
        // The escalation goes back to waiting for its answer.
        if let Some(release) = operations::find("release") {
            let reason = format!("the dashboard's answer was refused: {}", e.code());
            let _ = release.call(&app.store, json!({ "claim": held, "reason": reason }));
        }
        return Err(e);
    }
    Ok(())
}
