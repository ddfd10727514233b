//! Task replay and run comparison (docs/design.md §9, seed: Day1 Phase 5), the pure part: one timeline
//! entry per entry of the logs a task leaves (its handoffs' events, its plan's log, its curation
//! log), what each agent contributed, how the run ended, and two runs side by side. The store
//! reads the logs ([`crate::Store::replay`], [`crate::Store::compare`]).
//!
//! The folder: this file is the pure part; `store` reads the logs from the
//! [`Store`](crate::Store), `ops` holds the operations `replay` and `compare`.

pub(crate) mod ops;
pub(crate) mod store;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::curation::{Conversation, CurationEvent, Fact};
use crate::machine::{Change, Event};
use crate::record::Handoff;
use crate::task::{TaskChange, TaskEvent};

/// One thing that happened to a task, in a form every log's entries share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct TimelineEntry {
    /// When.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub at: DateTime<Utc>,
    /// What: `handoff.<change>` (`handoff.created`, `handoff.claimed`, …), `task.<change>`
    /// (`task.step_started`, …) or `curation.<change>` (`curation.cherry_picked`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// Who did it (`None` for the clock, or a caller that gave no name).
    pub agent: Option<String>,
    /// One line on it.
    pub summary: String,
    /// Its ids and values, as its log holds them.
    pub data: Value,
}

/// What one agent did in a task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct AgentContribution {
    /// The agent.
    pub agent: String,
    /// Its role, as it said when it joined the task (`join_task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Handoffs it created.
    pub handed_off: u64,
    /// Handoffs (or steps) it took.
    pub claimed: u64,
    /// Handoffs it completed.
    pub completed: u64,
    /// Attempts of its that failed.
    pub failed: u64,
    /// Curation changes on its branch (conversations, picks, facts, verifications, merges).
    pub curated: u64,
    /// Its first entry.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub first_at: Option<DateTime<Utc>>,
    /// Its last entry.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub last_at: Option<DateTime<Utc>>,
}

/// How a run ended (or stands).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct TaskOutcome {
    /// The task's status when it has a plan (`completed`, `failed`, …); otherwise `completed`
    /// once a handoff completed and nothing is left open, `failed` after a final failure, else
    /// `in_progress`.
    pub status: String,
    /// The last completion's outcome, as its holder wrote it.
    pub result: Option<String>,
    /// The first entry.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub started_at: Option<DateTime<Utc>>,
    /// The last entry.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub finished_at: Option<DateTime<Utc>>,
    /// From the first entry to the last.
    pub duration_seconds: Option<f64>,
}

/// A task's whole run: the timeline, the agents, its key knowledge and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct TaskReplay {
    /// The task.
    pub task_id: String,
    /// Every entry of its logs, oldest first (entries at the same instant in log order).
    pub timeline: Vec<TimelineEntry>,
    /// Each agent's contribution, by name.
    pub agents: Vec<AgentContribution>,
    /// Its verified (or, unless `verified_only`, not invalidated) facts.
    pub key_facts: Vec<Fact>,
    /// Its verified or cherry-picked conversations.
    pub key_conversations: Vec<Conversation>,
    /// How it ended.
    pub outcome: TaskOutcome,
}

/// The timeline entry of a handoff's event; `handoff`, the record, says what a created one
/// carries (a protocol message's type and iteration, its goal).
pub fn handoff_entry(event: &Event, handoff: Option<&Handoff>) -> TimelineEntry {
    let (kind, mut data) = split(&event.change);
    let id = &event.handoff_id;
    let summary = match &event.change {
        Change::Created { to_agent, .. } => {
            let to = to_agent.as_deref().unwrap_or("any agent");
            match handoff {
                Some(h) => {
                    if let Value::Object(fields) = &mut data {
                        fields.insert("kind".into(), word(&h.kind).into());
                        fields.insert("goal".into(), h.goal.clone().into());
                    }
                    match &h.protocol {
                        Some(message) => {
                            let handoff_type = word(&message.handoff_type);
                            if let Value::Object(fields) = &mut data {
                                fields.insert("protocol".into(), handoff_type.clone().into());
                                fields.insert("iteration".into(), message.iteration.into());
                            }
                            format!(
                                "{} message {id} (iteration {}) for {to}",
                                handoff_type.replace('_', " "),
                                message.iteration
                            )
                        }
                        None => format!("handoff {id} for {to}: {}", clip(&h.goal)),
                    }
                }
                None => format!("handoff {id} created for {to}"),
            }
        }
        Change::Claimed { agent, token, .. } => format!("{agent} claimed {id} (token {token})"),
        Change::Completed { outcome, .. } => format!("{id} completed: {}", clip(outcome)),
        Change::Failed { error, .. } => format!(
            "{id} failed: {}",
            clip(error.as_deref().unwrap_or("the lease ran out"))
        ),
        Change::AttemptFailed { error, .. } => format!("{id} attempt failed: {}", clip(error)),
        _ => format!("{id} {}", kind.replace('_', " ")),
    };
    TimelineEntry {
        at: event.at,
        kind: format!("handoff.{kind}"),
        agent: claimed_by(event),
        summary,
        data,
    }
}

/// A tagged change's kind (`claimed`) and its detail, from one serialisation.
fn split(change: &impl Serialize) -> (String, Value) {
    match serde_json::to_value(change) {
        Ok(Value::Object(mut fields)) => {
            let kind = match fields.remove("kind") {
                Some(Value::String(kind)) => kind,
                _ => String::new(),
            };
            (kind, fields.remove("detail").unwrap_or(Value::Null))
        }
        Ok(Value::String(kind)) => (kind, Value::Null),
        _ => (String::new(), Value::Null),
    }
}

/// The agent of an event: who claimed, for a claim; its actor otherwise.
fn claimed_by(event: &Event) -> Option<String> {
    match &event.change {
        Change::Claimed { agent, .. } => Some(agent.clone()),
        _ => event.actor.clone(),
    }
}

/// The timeline entry of an entry of a task's plan log.
pub fn task_entry(event: &TaskEvent) -> TimelineEntry {
    let (kind, data) = split(&event.change);
    let agent = match &event.change {
        TaskChange::StepStarted { agent, .. } | TaskChange::AgentJoin { agent, .. } => {
            Some(agent.clone())
        }
        _ => event.actor.clone(),
    };
    let summary = match (&event.change, data.get("step").and_then(Value::as_str)) {
        (TaskChange::AgentJoin { agent, role, .. }, _) => match role {
            Some(role) => format!("{agent} joined as {role}"),
            None => format!("{agent} joined"),
        },
        (_, Some(step)) => format!("step {step} {}", kind.trim_start_matches("step_")),
        (_, None) => format!("task {}", kind.replace('_', " ")),
    };
    TimelineEntry {
        at: event.at,
        kind: format!("task.{kind}"),
        agent,
        summary,
        data,
    }
}

/// The timeline entry of an entry of the curation log.
pub fn curation_entry(event: &CurationEvent) -> TimelineEntry {
    let kind = word(&event.kind);
    let agent = event.branch.as_str().split('/').nth(2).map(str::to_owned);
    let summary = format!("{} on {}", kind.replace('_', " "), event.branch);
    TimelineEntry {
        at: event.at,
        kind: format!("curation.{kind}"),
        agent,
        summary,
        data: event.detail.clone(),
    }
}

/// A unit enum's or a tagged enum's JSON word (`claimed`, `step_started`).
fn word<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(word)) => word,
        Ok(Value::Object(fields)) => fields
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    }
}

fn clip(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// Each agent's contribution to `timeline`, by name.
pub fn contributions(timeline: &[TimelineEntry]) -> Vec<AgentContribution> {
    let mut agents: BTreeMap<&str, AgentContribution> = BTreeMap::new();
    for entry in timeline {
        let Some(name) = entry.agent.as_deref() else {
            continue;
        };
        let agent = agents.entry(name).or_insert_with(|| AgentContribution {
            agent: name.to_owned(),
            ..AgentContribution::default()
        });
        match entry.kind.as_str() {
            "handoff.created" => agent.handed_off += 1,
            "handoff.claimed" => agent.claimed += 1,
            "handoff.completed" => agent.completed += 1,
            "handoff.failed" | "handoff.attempt_failed" => agent.failed += 1,
            kind if kind.starts_with("curation.") => agent.curated += 1,
            "task.agent_join" => {
                if let Some(role) = entry.data.get("role").and_then(Value::as_str) {
                    agent.role = Some(role.to_owned());
                }
            }
            _ => {}
        }
        agent.first_at = Some(agent.first_at.map_or(entry.at, |t| t.min(entry.at)));
        agent.last_at = Some(agent.last_at.map_or(entry.at, |t| t.max(entry.at)));
    }
    agents.into_values().collect()
}

/// How a run whose timeline is `timeline` ended, with `status` the task's own when it has a
/// plan.
pub fn outcome(timeline: &[TimelineEntry], status: Option<String>) -> TaskOutcome {
    let started_at = timeline.iter().map(|e| e.at).min();
    let finished_at = timeline.iter().map(|e| e.at).max();
    let result = timeline
        .iter()
        .rev()
        .find(|e| e.kind == "handoff.completed")
        .and_then(|e| {
            e.data
                .get("outcome")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let status = status.unwrap_or_else(|| {
        let count = |kind: &str| timeline.iter().filter(|e| e.kind == kind).count();
        let (created, completed, failed) = (
            count("handoff.created"),
            count("handoff.completed"),
            count("handoff.failed"),
        );
        if failed > 0 {
            "failed"
        } else if created > 0 && completed >= created {
            "completed"
        } else {
            "in_progress"
        }
        .to_owned()
    });
    #[allow(clippy::cast_precision_loss)] // milliseconds of a run, far below 2^52
    let duration_seconds = started_at
        .zip(finished_at)
        .map(|(from, to)| (to - from).num_milliseconds() as f64 / 1000.0);
    TaskOutcome {
        status,
        result,
        started_at,
        finished_at,
        duration_seconds,
    }
}

/// What two sets share and what only one holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Overlap {
    /// Only in the first run.
    pub only_a: Vec<String>,
    /// Only in the second.
    pub only_b: Vec<String>,
    /// In both.
    pub both: Vec<String>,
}

impl Overlap {
    /// The overlap of `a` and `b`, each sorted.
    pub fn of(a: impl IntoIterator<Item = String>, b: impl IntoIterator<Item = String>) -> Overlap {
        let a: BTreeSet<String> = a.into_iter().collect();
        let b: BTreeSet<String> = b.into_iter().collect();
        Overlap {
            only_a: a.difference(&b).cloned().collect(),
            only_b: b.difference(&a).cloned().collect(),
            both: a.intersection(&b).cloned().collect(),
        }
    }
}

/// Two runs side by side (an original and its rerun, say).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct TaskComparison {
    /// The first task.
    pub task_a: String,
    /// The second.
    pub task_b: String,
    /// The agents that took part.
    pub agents: Overlap,
    /// The decisions recorded: the handoffs' `decisions` and the decision points picked from
    /// their conversations.
    pub decision_points: Overlap,
    /// Their key facts, by text.
    pub facts: Overlap,
    /// How the first ended.
    pub outcome_a: TaskOutcome,
    /// How the second ended.
    pub outcome_b: TaskOutcome,
    /// Entries in the first timeline.
    pub timeline_length_a: u64,
    /// Entries in the second.
    pub timeline_length_b: u64,
}

impl TaskComparison {
    /// The comparison of two replays, with the decisions each recorded.
    pub fn of(
        a: &TaskReplay,
        b: &TaskReplay,
        decisions_a: Vec<String>,
        decisions_b: Vec<String>,
    ) -> TaskComparison {
        let names = |r: &TaskReplay| r.agents.iter().map(|a| a.agent.clone()).collect::<Vec<_>>();
        let texts = |r: &TaskReplay| {
            r.key_facts
                .iter()
                .map(|f| f.text.clone())
                .collect::<Vec<_>>()
        };
        TaskComparison {
            task_a: a.task_id.clone(),
            task_b: b.task_id.clone(),
            agents: Overlap::of(names(a), names(b)),
            decision_points: Overlap::of(decisions_a, decisions_b),
            facts: Overlap::of(texts(a), texts(b)),
            outcome_a: a.outcome.clone(),
            outcome_b: b.outcome.clone(),
            timeline_length_a: a.timeline.len() as u64,
            timeline_length_b: b.timeline.len() as u64,
        }
    }
}
