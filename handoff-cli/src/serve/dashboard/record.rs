//! `/handoffs/{id}`: one record — where it stands (its claim's lease and last heartbeat, the
//! holder's progress, priority, attempts, why it failed or was refused), the forms that act on
//! it, its handover DNA and its events.

use handoff_core::{Error, Status};

use super::html::{Page, badge, esc, short_id, table, task_link, when};
use super::names::agent;
use super::{Ctx, state};
use crate::output::{clip, time};

pub(super) fn page(ctx: &Ctx<'_>, id: &str) -> Result<Page, Error> {
    let h = ctx.store.get(id)?;
    let events = ctx.store.events(Some(id))?;
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let detail = ctx
                .out
                .json(serde_json::to_value(&e.change).unwrap_or_default());
            vec![
                esc(&time(e.at)),
                esc(e.change.kind()),
                agent(e.actor.as_deref().unwrap_or_default()),
                match &detail["detail"] {
                    serde_json::Value::Null => String::new(),
                    d => esc(&clip(&d.to_string(), 300)),
                },
            ]
        })
        .collect();
    let subtitle = format!(
        "{} &nbsp; task {} &nbsp; {} → {}",
        badge(h.status.as_str()),
        task_link(&h.task_id),
        agent(h.from_agent.as_deref().unwrap_or("*")),
        agent(h.to_agent.as_deref().unwrap_or("anyone"))
    );
    let mut facts: Vec<(&str, String)> = vec![
        ("status", badge(h.status.as_str())),
        ("priority", state::priority(&h).to_string()),
        ("attempts", state::attempts(&h)),
        ("created", when(ctx.now, h.created_at)),
    ];
    if h.status == Status::Claimed {
        facts.extend([
            (
                "held by",
                agent(h.claimed_by.as_deref().unwrap_or_default()),
            ),
            ("lease", state::lease(ctx.now, &h)),
            ("last heartbeat", state::heartbeat(ctx.now, &h)),
        ]);
    }
    if let Some(progress) = state::field(&h, "progress") {
        let shown = ctx.out.json(progress);
        facts.push((
            "progress",
            format!("<code>{}</code>", esc(&clip(&shown.to_string(), 4096))),
        ));
    }
    if let Some(failure) = state::failure(&events) {
        facts.push(("last failure", state::failure_cell(ctx, Some(&failure))));
        facts.push(("failed", state::failure_time(ctx, Some(&failure))));
    }
    if let Some(at) = h.completed_at {
        facts.push(("settled", when(ctx.now, at)));
    }
    let dl: String = facts
        .iter()
        .map(|(k, v)| format!("<dt>{}</dt><dd>{v}</dd>", esc(k)))
        .collect();
    let actions = state::actions(ctx, &h);
    Ok(Page::new(format!("Handoff {}", short_id(id)), subtitle)
        .section(
            "State",
            format!(
                "<dl class=\"kv\">{dl}</dl>{}",
                if actions.is_empty() {
                    String::new()
                } else {
                    format!("<p>{actions}</p>")
                }
            ),
        )
        .section(
            "Handover record",
            format!("<pre>{}</pre>", esc(&ctx.out.markdown(&h))),
        )
        .section(
            "Events",
            table(&["at", "what", "by", "detail"], &rows, "No events."),
        ))
}
