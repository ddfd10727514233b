//! `/tasks`: the tasks with a plan, each with its name, status, steps done, and the forms that
//! pause, resume or cancel it.

use handoff_core::Error;
use serde_json::Value;

use super::Ctx;
use super::forms::{form, text};
use super::html::{Page, badge, esc, seg, table, task_link, when};
use super::{ROWS, Session};
use crate::output::clip;

pub(super) fn page(ctx: &Ctx<'_>) -> Result<Page, Error> {
    let tasks = ctx.store.list_tasks(None, Some(ROWS * 4), None)?;
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            let t = ctx.out.json(serde_json::to_value(t).unwrap_or_default());
            let text = |key: &str| {
                t.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let n = |key: &str| t.get(key).and_then(Value::as_u64).unwrap_or_default();
            let id = text("id");
            let updated = chrono::DateTime::parse_from_rfc3339(&text("updated_at"))
                .map(|at| when(ctx.now, at.to_utc()))
                .unwrap_or_else(|_| esc(&text("updated_at")));
            vec![
                task_link(&id),
                format!("<a href=\"/tasks/{}\">{}</a>", seg(&id), esc(&text("name"))),
                badge(&text("status")),
                format!("{}/{}", n("steps_done"), n("steps_total")),
                esc(&clip(&text("goal"), 80)),
                updated,
                controls(ctx.session, &ctx.back, &id, &text("status")),
            ]
        })
        .collect();
    Ok(Page::new("Tasks", String::new()).section(
        "Plans",
        table(
            &[
                "task",
                "name",
                "status",
                "steps done",
                "goal",
                "updated",
                "act",
            ],
            &rows,
            "No task has a plan yet: a task is also any task_id handoffs share (see the queue).",
        ),
    ))
}

/// The forms a task's status allows: pause one under way, resume a paused one, cancel one
/// not yet finished.
pub(super) fn controls(session: &Session, back: &str, id: &str, status: &str) -> String {
    let task = [("id", id)];
    let mut html = String::new();
    match status {
        "pending" | "in_progress" => {
            html.push_str(&form(session, "pause_task", back, &task, "", "Pause"));
        }
        "paused" => {
            html.push_str(&form(session, "resume_task", back, &task, "", "Resume"));
        }
        _ => {}
    }
    if matches!(status, "pending" | "in_progress" | "paused") {
        html.push_str(&form(
            session,
            "cancel_task",
            back,
            &task,
            &text("reason", "why cancel (optional)", false),
            "Cancel task",
        ));
    }
    html
}
