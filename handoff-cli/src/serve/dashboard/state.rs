//! What a record's state means to an operator, told the same on every page: whether its lease
//! is live or lapsed, when its holder last showed a sign of life and what progress it
//! reported, why it failed or was refused, and the forms that act on it.

use chrono::{DateTime, Utc};
use handoff_core::{Change, Error, Event, Handoff, Status, Store};
use serde_json::Value;

use super::Ctx;
use super::forms::{form, text};
use super::html::{esc, json_cell, span, when};
use crate::output::clip;

/// What the lease of a claimed record says: `ends in 41 s`, or `lapsed 9 s ago — reclaimable`
/// (the claim still shows as held until another agent takes it or the store is reaped, but
/// its holder's token may be beaten to it).
pub(super) fn lease(now: DateTime<Utc>, h: &Handoff) -> String {
    if h.status != Status::Claimed {
        return String::new();
    }
    match h.lease_until {
        Some(until) if until <= now => format!(
            "<strong class=\"error\">lapsed {} ago — reclaimable</strong>",
            span(now.signed_duration_since(until).num_seconds())
        ),
        Some(until) => format!(
            "ends in {}",
            span(until.signed_duration_since(now).num_seconds())
        ),
        None => "no lease".to_owned(),
    }
}

/// Whether a claimed record's lease has lapsed.
pub(super) fn lapsed(now: DateTime<Utc>, h: &Handoff) -> bool {
    h.status == Status::Claimed && h.lease_until.is_some_and(|until| until <= now)
}

/// The holder's last heartbeat (`12 s ago`), or `none since the claim` when it has sent none.
pub(super) fn heartbeat(now: DateTime<Utc>, h: &Handoff) -> String {
    match h.heartbeat_at {
        Some(at) => when(now, at),
        None => "none yet".to_owned(),
    }
}

/// A field of the record as JSON (`progress`, `priority`), read through its serialized form so
/// that a page shows it whenever the core's record carries it.
pub(super) fn field(h: &Handoff, name: &str) -> Option<Value> {
    serde_json::to_value(h)
        .ok()?
        .get(name)
        .filter(|v| !v.is_null())
        .cloned()
}

/// The holder's last reported progress (`heartbeat(..., progress)`), redacted, clipped.
pub(super) fn progress(ctx: &Ctx<'_>, h: &Handoff) -> String {
    match field(h, "progress") {
        Some(p) => json_cell(&ctx.out.json(p), 120),
        None => String::new(),
    }
}

/// The record's priority (0 when the core's record has none).
pub(super) fn priority(h: &Handoff) -> i64 {
    field(h, "priority").and_then(|p| p.as_i64()).unwrap_or(0)
}

/// `attempts/max_attempts`.
pub(super) fn attempts(h: &Handoff) -> String {
    format!("{}/{}", h.attempts, h.max_attempts)
}

/// The latest event of `id` that says why it failed or was refused: an attempt's error, the
/// last attempt's, a lease that ran out on it, a refusal's reason. With who and when.
pub(super) struct Failure {
    pub kind: &'static str,
    pub why: String,
    pub actor: Option<String>,
    pub at: DateTime<Utc>,
}

pub(super) fn failure(events: &[Event]) -> Option<Failure> {
    events.iter().rev().find_map(|e| {
        let why = match &e.change {
            Change::AttemptFailed { error, .. } => error.clone(),
            Change::Failed {
                error: Some(error), ..
            } => error.clone(),
            Change::Failed { error: None, .. } => {
                "its holder's lease ran out on the last attempt".to_owned()
            }
            Change::Rejected { reason } => reason.clone(),
            Change::Cancelled { reason } => reason.clone().unwrap_or_default(),
            _ => return None,
        };
        Some(Failure {
            kind: e.change.kind(),
            why,
            actor: e.actor.clone(),
            at: e.at,
        })
    })
}

/// [`failure`] of one record, read from its events.
pub(super) fn failure_of(store: &Store, id: &str) -> Result<Option<Failure>, Error> {
    Ok(failure(&store.events(Some(id))?))
}

/// The failure as a cell: its kind, the error or reason (redacted, escaped), who and when.
pub(super) fn failure_cell(ctx: &Ctx<'_>, failure: Option<&Failure>) -> String {
    match failure {
        None => String::new(),
        Some(f) => format!(
            "<span class=\"error\">{}</span>{}",
            esc(&clip(&ctx.out.text(&f.why), 200)),
            match &f.actor {
                Some(actor) => format!(
                    " <small>({} by {})</small>",
                    esc(f.kind),
                    super::names::agent(actor)
                ),
                None => format!(" <small>({})</small>", esc(f.kind)),
            }
        ),
    }
}

/// When a failure happened, as a cell.
pub(super) fn failure_time(ctx: &Ctx<'_>, failure: Option<&Failure>) -> String {
    failure.map_or_else(String::new, |f| when(ctx.now, f.at))
}

/// The forms that act on a record, for what its status allows: retry a failed, rejected or
/// cancelled one; release a claim; change the priority of, or cancel, one not yet settled.
pub(super) fn actions(ctx: &Ctx<'_>, h: &Handoff) -> String {
    let id = [("id", h.id.as_str())];
    let back = ctx.back.as_str();
    let mut html = String::new();
    match h.status {
        Status::Failed | Status::Rejected | Status::Cancelled => {
            html.push_str(&form(
                ctx.session,
                "retry",
                back,
                &id,
                &text("reason", "why retry (optional)", false),
                "Retry",
            ));
        }
        // A lapsed claim is anyone's to take already: there is nothing to release.
        Status::Claimed if !lapsed(ctx.now, h) => {
            html.push_str(&form(
                ctx.session,
                "revoke_claim",
                back,
                &id,
                &text("reason", "why release it", true),
                "Release claim",
            ));
        }
        _ => {}
    }
    if matches!(h.status, Status::Pending | Status::Claimed) {
        html.push_str(&form(
            ctx.session,
            "set_priority",
            back,
            &id,
            &format!(
                "<input type=\"number\" name=\"priority\" value=\"{}\" aria-label=\"priority\" required>",
                priority(h)
            ),
            "Set priority",
        ));
        html.push_str(&form(
            ctx.session,
            "cancel",
            back,
            &id,
            &text("reason", "why cancel (optional)", false),
            "Cancel",
        ));
    }
    html
}
