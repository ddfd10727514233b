//! A task's manager/worker run: where it stands, and each iteration as it went — what the
//! manager asked, what the worker reported (status, accomplished, issues, or its error), how
//! the manager decided and the instructions it gave next, and how long it took.

use handoff_core::Error;
use serde_json::Value;

use super::Ctx;
use super::html::{badge, esc, handoff_link, table};
use super::names::agent;
use crate::output::clip;

pub(super) fn section(ctx: &Ctx<'_>, run: &handoff_core::protocol::Run) -> Result<String, Error> {
    let value = ctx.out.json(serde_json::to_value(run).unwrap_or_default());
    let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or_default();
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // Each message's protocol body, redacted, with the record's id.
    let messages: Vec<(String, Value)> = ctx
        .store
        .protocol_history(&run.task_id)?
        .iter()
        .filter_map(|h| {
            let body = serde_json::to_value(h.protocol.as_deref()?).ok()?;
            Some((h.id.clone(), ctx.out.json(body)))
        })
        .collect();
    let history = value["history"].as_array().cloned().unwrap_or_default();
    let seconds = value["iteration_seconds"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = history
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let iteration = item["iteration"].as_u64().unwrap_or((i + 1) as u64);
            let of_this = |field: &str| {
                messages
                    .iter()
                    .rev()
                    .find(|(_, body)| {
                        body["iteration"].as_u64() == Some(iteration) && !body[field].is_null()
                    })
                    .map(|(id, body)| (id.clone(), body[field].clone()))
            };
            let report = match (of_this("worker_report"), of_this("error_report")) {
                (Some((id, report)), _) => report_cell(&id, &report),
                (None, Some((id, error))) => format!(
                    "{} <span class=\"error\">error: {}</span>",
                    handoff_link(&id),
                    esc(&clip(&text(&error, "description"), 200))
                ),
                (None, None) => String::new(),
            };
            let outcome = text(item, "outcome");
            // The instructions the decision gave are the next iteration's.
            let next = history
                .get(i + 1)
                .map(|next| text(next, "manager_instructions"))
                .filter(|s| !s.is_empty());
            let decision = match next {
                Some(next) => format!("{} → {}", badge(&outcome), esc(&clip(&next, 200))),
                None => badge(&outcome),
            };
            vec![
                iteration.to_string(),
                esc(&clip(&text(item, "manager_instructions"), 200)),
                report,
                decision,
                seconds
                    .get(i)
                    .and_then(Value::as_f64)
                    .map_or_else(String::new, |s| format!("{s:.1} s")),
            ]
        })
        .collect();
    Ok(format!(
        "<p>{} → {} &nbsp; phase {} &nbsp; iteration {} of {} &nbsp; retries {} of {} &nbsp; escalations {}</p>{}",
        agent(&text(&value, "manager")),
        agent(&text(&value, "worker")),
        badge(&text(&value, "phase")),
        n("iteration"),
        n("max_iterations"),
        n("retry_count"),
        n("max_retries"),
        n("escalations"),
        table(
            &["iteration", "asked", "report", "decision", "took"],
            &rows,
            "No iteration has started yet."
        )
    ))
}

/// A worker's report: its status, what it accomplished, the issues it met.
fn report_cell(id: &str, report: &Value) -> String {
    let list = |key: &str| -> Vec<String> {
        report[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| esc(&clip(s, 160)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut html = format!(
        "{} {}",
        handoff_link(id),
        badge(report["status"].as_str().unwrap_or_default())
    );
    let accomplished = list("accomplished");
    if !accomplished.is_empty() {
        html.push_str(&format!("<br>accomplished: {}", accomplished.join("; ")));
    }
    let issues = list("issues");
    if !issues.is_empty() {
        html.push_str(&format!(
            "<br><span class=\"error\">issues: {}</span>",
            issues.join("; ")
        ));
    }
    html
}
