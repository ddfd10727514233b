//! `/`: the queue — counts by status and agent, stalled tasks and why, every claim with its
//! lease and its holder's last sign of life, failed attempts, refusals and dead handoffs with
//! their errors, and what waits, highest priority first.

use handoff_core::{Error, Handoff, ListFilter, Status};

use super::html::{Page, badge, handoff_link, table, task_link, when};
use super::names::agent;
use super::state::{self, Failure};
use super::{Ctx, ROWS, STALLED_AFTER};
use crate::output::clip;

/// The most records of one status read to find those with failed attempts or to show the
/// newest refusals and dead handoffs: the store lists in insertion order, without a filter on
/// attempts, so a page reads at most this many of each.
const SCAN: usize = crate::operations::PAGE;
/// The most waiting records read: the waiting list is the largest of a busy store, and reading
/// a thousand of them doubled the page's time on 100,000 (`benches/dashboard_load.py`).
const SCAN_WAITING: usize = 200;

/// A record's first columns in every list.
fn handoff_cells(ctx: &Ctx<'_>, h: &Handoff) -> Vec<String> {
    vec![
        handoff_link(&h.id),
        task_link(&h.task_id),
        format!(
            "{} → {}",
            agent(h.from_agent.as_deref().unwrap_or("*")),
            agent(h.to_agent.as_deref().unwrap_or("anyone"))
        ),
        super::html::esc(&clip(&ctx.out.text(&h.goal), 80)),
    ]
}

const HANDOFF_HEADER: [&str; 4] = ["handoff", "task", "from → to", "goal"];

fn header(more: &[&'static str]) -> Vec<&'static str> {
    let mut header = HANDOFF_HEADER.to_vec();
    header.extend_from_slice(more);
    header
}

/// The newest `ROWS` records of `status` (of the first [`SCAN`]), newest first.
fn newest(ctx: &Ctx<'_>, status: Status) -> Result<Vec<Handoff>, Error> {
    let mut found = ctx.store.list(&ListFilter {
        status: Some(status),
        limit: Some(SCAN),
        ..ListFilter::default()
    })?;
    found.reverse();
    found.truncate(ROWS);
    Ok(found)
}

pub(super) fn page(ctx: &Ctx<'_>) -> Result<Page, Error> {
    let (counts_table, summary, waiting_total) = counts(ctx)?;
    let claimed = ctx.store.list(&ListFilter {
        status: Some(Status::Claimed),
        limit: Some(SCAN),
        ..ListFilter::default()
    })?;
    let pending = ctx.store.list(&ListFilter {
        status: Some(Status::Pending),
        limit: Some(SCAN_WAITING),
        ..ListFilter::default()
    })?;
    Ok(Page::new("Queue", summary)
        .section("By status and agent", counts_table)
        .section(
            "Stalled tasks (no sign of life for a minute)",
            stalled(ctx, &claimed)?,
        )
        .section("Being worked on", claims(ctx, &claimed))
        .section(
            "Failed attempts (tried again)",
            retrying(ctx, &claimed, &pending)?,
        )
        .section(
            "Dead handoffs (attempts used up)",
            settled(ctx, Status::Failed, "No handoff is dead.")?,
        )
        .section(
            "Rejected",
            settled(ctx, Status::Rejected, "No handoff was rejected.")?,
        )
        .section("Waiting, next first", waiting(ctx, pending, waiting_total)))
}

/// Counts by addressee and status, the line of totals under the title, and how many wait.
fn counts(ctx: &Ctx<'_>) -> Result<(String, String, u64), Error> {
    let counts = ctx.store.queue_counts()?;
    let statuses: Vec<Status> = Status::ALL
        .iter()
        .copied()
        .filter(|s| counts.iter().any(|c| c.status == *s))
        .collect();
    let mut agents: Vec<Option<&str>> = counts.iter().map(|c| c.to_agent.as_deref()).collect();
    agents.sort();
    agents.dedup();
    let total: u64 = counts.iter().map(|c| c.count).sum();
    let mut header = vec!["addressed to"];
    header.extend(statuses.iter().map(|s| s.as_str()));
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|to| {
            let mut row = vec![agent(to.unwrap_or("anyone"))];
            row.extend(statuses.iter().map(|status| {
                counts
                    .iter()
                    .find(|c| c.status == *status && c.to_agent.as_deref() == *to)
                    .map_or(String::new(), |c| c.count.to_string())
            }));
            row
        })
        .collect();
    let by_status: String = statuses
        .iter()
        .map(|status| {
            let n: u64 = counts
                .iter()
                .filter(|c| c.status == *status)
                .map(|c| c.count)
                .sum();
            format!("{} {n}", badge(status.as_str()))
        })
        .collect::<Vec<_>>()
        .join(" &nbsp; ");
    let waiting = counts
        .iter()
        .filter(|c| c.status == Status::Pending)
        .map(|c| c.count)
        .sum();
    Ok((
        table(&header, &rows, "No handoffs yet."),
        format!("{total} handoffs &nbsp; {by_status}"),
        waiting,
    ))
}

/// Stalled tasks: who holds their work, how long since its last sign of life, and why that
/// counts as stalled (a quiet holder, a lapsed lease, a checkpoint nobody took up).
fn stalled(ctx: &Ctx<'_>, claimed: &[Handoff]) -> Result<String, Error> {
    let tasks = ctx.store.stalled(STALLED_AFTER)?;
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .take(ROWS)
        .map(|task| {
            let held: Vec<&Handoff> = claimed.iter().filter(|h| h.task_id == *task).collect();
            let Some(h) = held
                .iter()
                .max_by_key(|h| h.heartbeat_at.unwrap_or(h.created_at))
            else {
                return vec![
                    task_link(task),
                    String::new(),
                    String::new(),
                    "its latest record is a checkpoint older than a minute, and no agent has \
                     taken the work up"
                        .to_owned(),
                ];
            };
            let beat = h.heartbeat_at.unwrap_or(h.created_at);
            let why = if state::lapsed(ctx.now, h) {
                format!(
                    "the lease of {} {}",
                    handoff_link(&h.id),
                    state::lease(ctx.now, h)
                )
            } else {
                format!(
                    "{} holds {} under a live lease but has sent no heartbeat for over a minute",
                    agent(h.claimed_by.as_deref().unwrap_or_default()),
                    handoff_link(&h.id)
                )
            };
            vec![
                task_link(task),
                held.iter()
                    .map(|h| agent(h.claimed_by.as_deref().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(", "),
                when(ctx.now, beat),
                why,
            ]
        })
        .collect();
    Ok(table(
        &["task", "held by", "last sign of life", "why"],
        &rows,
        "Nothing is stalled.",
    ))
}

/// Every claim: its holder, its lease (live or lapsed), the last heartbeat and progress.
fn claims(ctx: &Ctx<'_>, claimed: &[Handoff]) -> String {
    let stalled_after = chrono::TimeDelta::from_std(STALLED_AFTER).unwrap_or_default();
    let rows: Vec<Vec<String>> = claimed
        .iter()
        .take(ROWS)
        .map(|h| {
            let mut row = handoff_cells(ctx, h);
            let quiet = ctx
                .now
                .signed_duration_since(h.heartbeat_at.unwrap_or(h.created_at));
            let mut beat = state::heartbeat(ctx.now, h);
            if quiet > stalled_after {
                beat = format!("<strong class=\"error\">{beat} — stalled</strong>");
            }
            row.extend([
                agent(h.claimed_by.as_deref().unwrap_or_default()),
                state::lease(ctx.now, h),
                beat,
                state::progress(ctx, h),
                state::attempts(h),
                state::actions(ctx, h),
            ]);
            row
        })
        .collect();
    table(
        &header(&[
            "held by",
            "lease",
            "last heartbeat",
            "progress",
            "attempts",
            "act",
        ]),
        &rows,
        "Nobody holds a claim.",
    )
}

/// Records in the queue again after a failed attempt: the error of the last one.
fn retrying(ctx: &Ctx<'_>, claimed: &[Handoff], pending: &[Handoff]) -> Result<String, Error> {
    let mut rows = Vec::new();
    for h in claimed.iter().chain(pending).filter(|h| h.attempts > 0) {
        if rows.len() == ROWS {
            break;
        }
        let failure = state::failure_of(ctx.store, &h.id)?;
        let Some(failure) = failure.filter(|f| f.kind == "attempt_failed") else {
            continue;
        };
        let mut row = handoff_cells(ctx, h);
        row.extend([
            super::html::badge(h.status.as_str()),
            state::failure_cell(ctx, Some(&failure)),
            state::attempts(h),
            state::failure_time(ctx, Some(&failure)),
        ]);
        rows.push(row);
    }
    Ok(table(
        &header(&["status now", "last error", "attempts", "failed"]),
        &rows,
        "No attempt failed among the records in the queue.",
    ))
}

/// The newest records of a settled status (`failed`, `rejected`) with their error or reason,
/// attempts and time, and a retry form.
fn settled(ctx: &Ctx<'_>, status: Status, empty: &str) -> Result<String, Error> {
    let mut rows = Vec::new();
    for h in newest(ctx, status)? {
        let failure: Option<Failure> = state::failure_of(ctx.store, &h.id)?;
        let mut row = handoff_cells(ctx, &h);
        row.extend([
            state::failure_cell(ctx, failure.as_ref()),
            state::attempts(&h),
            match &failure {
                Some(f) => when(ctx.now, f.at),
                None => h
                    .completed_at
                    .map_or_else(String::new, |at| when(ctx.now, at)),
            },
            state::actions(ctx, &h),
        ]);
        rows.push(row);
    }
    let why = if status == Status::Rejected {
        "reason"
    } else {
        "error"
    };
    Ok(table(
        &header(&[why, "attempts", "when", "act"]),
        &rows,
        empty,
    ))
}

/// Pending records, highest priority first and oldest within a priority (the order
/// `claim_next` takes them in), among the oldest [`SCAN_WAITING`]: the store lists in the
/// order records were made, so with more waiting the page says so.
fn waiting(ctx: &Ctx<'_>, mut pending: Vec<Handoff>, total: u64) -> String {
    pending.sort_by_key(|h| std::cmp::Reverse(state::priority(h)));
    let rows: Vec<Vec<String>> = pending
        .iter()
        .take(ROWS)
        .map(|h| {
            let mut row = handoff_cells(ctx, h);
            row.extend([
                state::priority(h).to_string(),
                state::attempts(h),
                when(ctx.now, h.created_at),
                state::actions(ctx, h),
            ]);
            row
        })
        .collect();
    let note = if total > pending.len() as u64 {
        format!(
            "<p class=\"sub\">{total} wait: the highest priorities among the oldest {} are \
             shown.</p>",
            pending.len()
        )
    } else {
        String::new()
    };
    format!(
        "{note}{}",
        table(
            &header(&["priority", "attempts", "created", "act"]),
            &rows,
            "Nothing waits.",
        )
    )
}
