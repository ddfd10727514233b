//! `/tasks/{id}`: one task — its name and plan (each running step's holder, lease and last
//! heartbeat), its open escalations with the form that resolves them, the chain as a graph,
//! the manager/worker run ([`super::protocol`]) and the replay timeline.

use handoff_core::{Error, Handoff, Kind, ListFilter, Status};
use serde_json::Value;

use super::chain::chain_graph;
use super::forms::{form, text};
use super::html::{Page, badge, esc, handoff_link, table, when};
use super::names::agent;
use super::{Ctx, ROWS, found, protocol, state, tasks};
use crate::output::{clip, time};

pub(super) fn page(ctx: &Ctx<'_>, id: &str) -> Result<Page, Error> {
    let store = ctx.store;
    let plan = found(store.get_task(id))?;
    let chain = store.chain(id)?;
    let run = found(store.protocol_run(id))?;
    let replay = found(store.replay(id, false))?;
    if plan.is_none() && chain.hops.is_empty() && replay.is_none() {
        return Err(Error::NotFound {
            what: "task",
            id: id.to_owned(),
        });
    }
    let mut page = Page::new(format!("Task {id}"), String::new());
    // Steps whose attempts ran out: each waits for the answer to its escalation.
    let mut escalated: Vec<String> = Vec::new();
    if let Some(plan) = &plan {
        let value = ctx.out.json(plan.to_value());
        let text = |v: &Value, key: &str| {
            v.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let name = text(&value, "name");
        if !name.is_empty() {
            page.title = format!("Task: {name}");
        }
        let status = text(&value, "status");
        page.subtitle = format!(
            "{} &nbsp; {} &nbsp; <small>id {}</small> {}",
            badge(&status),
            esc(&text(&value["plan"], "goal")),
            esc(id),
            tasks::controls(ctx.session, &ctx.back, id, &status)
        );
        let steps = value["plan"]["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut rows = Vec::new();
        for s in &steps {
            rows.push(step_row(ctx, s, &text)?);
            if s["status"] == "escalated" {
                escalated.push(text(s, "id"));
            }
        }
        page = page.section(
            "Plan",
            table(
                &[
                    "step",
                    "name",
                    "agent",
                    "status",
                    "after",
                    "attempts",
                    "handoff",
                    "held by",
                    "lease",
                    "last heartbeat",
                    "error",
                ],
                &rows,
                "The plan has no steps.",
            ),
        );
    }
    page = page.section("Open escalations", escalations(ctx, id, &escalated)?);
    page = page.section("Chain", chain_graph(&chain));
    if let Some(run) = &run {
        page = page.section("Manager/worker run", protocol::section(ctx, run)?);
    }
    if let Some(replay) = &replay {
        let rows: Vec<Vec<String>> = replay
            .timeline
            .iter()
            .rev()
            .take(ROWS * 8)
            .map(|e| {
                vec![
                    esc(&time(e.at)),
                    esc(&e.kind),
                    agent(e.agent.as_deref().unwrap_or_default()),
                    esc(&ctx.out.text(&clip(&e.summary, 140))),
                ]
            })
            .collect();
        page = page.section(
            "Timeline, newest first",
            table(
                &["at", "what", "agent", "summary"],
                &rows,
                "Nothing happened yet.",
            ),
        );
    }
    Ok(page)
}

/// A step's row: what the plan says, and for a step whose handoff is claimed, who holds it,
/// its lease and the holder's last heartbeat.
fn step_row(
    ctx: &Ctx<'_>,
    s: &Value,
    text: &dyn Fn(&Value, &str) -> String,
) -> Result<Vec<String>, Error> {
    let deps: Vec<String> = s["dependencies"]
        .as_array()
        .map(|d| d.iter().filter_map(Value::as_str).map(esc).collect())
        .unwrap_or_default();
    let record = match s["handoff_id"].as_str() {
        Some(h) => found(ctx.store.get(h))?,
        None => None,
    };
    let held = record.as_ref().filter(|h| h.status == Status::Claimed);
    Ok(vec![
        esc(&text(s, "id")),
        esc(&text(s, "name")),
        agent(&text(s, "agent")),
        badge(&text(s, "status")),
        deps.join(", "),
        format!(
            "{}/{}",
            s["attempts"].as_u64().unwrap_or(0),
            s["max_attempts"].as_u64().unwrap_or(0)
        ),
        match s["handoff_id"].as_str() {
            Some(h) => handoff_link(h),
            None => String::new(),
        },
        held.map_or_else(String::new, |h| {
            agent(h.claimed_by.as_deref().unwrap_or_default())
        }),
        held.map_or_else(String::new, |h| state::lease(ctx.now, h)),
        held.map_or_else(String::new, |h| {
            let mut beat = state::heartbeat(ctx.now, h);
            let progress = state::progress(ctx, h);
            if !progress.is_empty() {
                beat = format!("{beat}<br>{progress}");
            }
            beat
        }),
        esc(&clip(&text(s, "error"), 60)),
    ])
}

/// The task's escalations not yet answered, each with the form that answers it: a step's
/// whose attempts ran out (`resolve_escalation`: retry the step or skip it; the step is among
/// `escalated`) or a manager/worker run's (`resolve`). A step handed up to a stronger agent
/// (`escalate_step`) is that step's offer, worked like any other, and shown in the plan.
fn escalations(ctx: &Ctx<'_>, task: &str, escalated: &[String]) -> Result<String, Error> {
    let open: Vec<Handoff> = ctx
        .store
        .list(&ListFilter {
            task_id: Some(task.to_owned()),
            kind: Some(Kind::Escalation),
            ..ListFilter::default()
        })?
        .into_iter()
        .filter(|h| matches!(h.status, Status::Pending | Status::Claimed))
        .filter(|h| {
            h.protocol.is_some()
                || h.metadata
                    .get("step_id")
                    .and_then(Value::as_str)
                    .is_some_and(|step| escalated.iter().any(|e| e == step))
        })
        .collect();
    let rows: Vec<Vec<String>> = open
        .iter()
        .take(ROWS)
        .map(|h| {
            let id = [("handoff_id", h.id.as_str())];
            let answer = if h.protocol.is_some() {
                form(
                    ctx.session,
                    "resolve",
                    &ctx.back,
                    &id,
                    &format!(
                        "{}{}",
                        text("resolution", "the answer", true),
                        text("resume_instructions", "how to resume (optional)", false)
                    ),
                    "Resolve",
                )
            } else {
                form(
                    ctx.session,
                    "resolve_escalation",
                    &ctx.back,
                    &id,
                    &format!(
                        "{}<label><input type=\"checkbox\" name=\"retry\" value=\"true\" checked> \
                         retry the step (else skip it)</label>",
                        text("resolution", "the answer", true)
                    ),
                    "Resolve",
                )
            };
            let held = match h.status {
                Status::Claimed => format!(
                    "held by {} ({})",
                    agent(h.claimed_by.as_deref().unwrap_or_default()),
                    state::lease(ctx.now, h)
                ),
                _ => String::new(),
            };
            vec![
                handoff_link(&h.id),
                agent(h.to_agent.as_deref().unwrap_or("anyone")),
                esc(&clip(&ctx.out.text(&h.goal), 120)),
                when(ctx.now, h.created_at),
                format!("{held}{answer}"),
            ]
        })
        .collect();
    Ok(table(
        &["escalation", "to", "what", "raised", "answer"],
        &rows,
        "No escalation waits for an answer.",
    ))
}
