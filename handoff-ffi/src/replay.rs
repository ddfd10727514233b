//! A task's replay and the comparison of two runs (docs/design.md §9) as the foreign languages see
//! them: one ordered timeline over the task's handoffs' events, its plan's log and its curation
//! log, what each agent contributed, its key facts and conversations, and how it ended.
//!
//! A timeline entry's kind is text (`handoff.created`, `task.step_started`,
//! `curation.facts_added`, ...), as its logs name it; its `data` is JSON text.

use std::time::{Duration, SystemTime};

use handoff_core::replay;

use crate::arguments::text;
use crate::curation::{Conversation, Fact};
use crate::record::time;

pub use handoff_core::replay::{AgentContribution, Overlap};

/// One thing that happened to a task.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TimelineEntry {
    /// When.
    pub at: SystemTime,
    /// What (the other bindings' `type`): `handoff.<change>` (`handoff.created`,
    /// `handoff.claimed`, `handoff.completed`, ...), `task.<change>` (`task.step_started`, ...)
    /// or `curation.<change>` (`curation.facts_added`, `curation.cherry_picked`,
    /// `curation.bundle_created`, ...).
    pub kind: String,
    /// Who did it: none for the clock, or a caller that gave no name.
    pub agent: Option<String>,
    /// One line on it.
    pub summary: String,
    /// Its ids and values, as its log holds them: JSON text (`{}` when it has none).
    pub data: String,
}

/// How a run ended (or stands).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TaskOutcome {
    /// The task's status when it has a plan (`completed`, `failed`, ...); otherwise
    /// `completed` once a handoff completed and nothing is left open, `failed` after a final
    /// failure, else `in_progress`.
    pub status: String,
    /// The last completion's outcome, as its holder wrote it.
    pub result: Option<String>,
    /// The first entry.
    pub started_at: Option<SystemTime>,
    /// The last entry.
    pub finished_at: Option<SystemTime>,
    /// From the first entry to the last (the other bindings' `duration_seconds`).
    pub duration: Option<Duration>,
}

/// A task's whole run: the timeline, the agents, its key knowledge and how it ended.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct TaskReplay {
    /// The task.
    pub task_id: String,
    /// Every entry of its logs, oldest first (entries at the same instant in log order).
    pub timeline: Vec<TimelineEntry>,
    /// Each agent's contribution, by name.
    pub agents: Vec<AgentContribution>,
    /// Its verified facts (unless `verified_only`, also those not verified yet, but never
    /// invalidated ones).
    pub key_facts: Vec<Fact>,
    /// Its verified or cherry-picked conversations (unless `verified_only`, every one not
    /// invalidated).
    pub key_conversations: Vec<Conversation>,
    /// How it ended.
    pub outcome: TaskOutcome,
}

/// Two runs side by side (an original and its rerun, say).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
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

impl From<replay::TimelineEntry> for TimelineEntry {
    fn from(entry: replay::TimelineEntry) -> Self {
        TimelineEntry {
            at: time(entry.at),
            kind: entry.kind,
            agent: entry.agent,
            summary: entry.summary,
            data: match entry.data {
                serde_json::Value::Null => "{}".to_owned(),
                data => text(data),
            },
        }
    }
}

impl From<replay::TaskOutcome> for TaskOutcome {
    fn from(o: replay::TaskOutcome) -> Self {
        TaskOutcome {
            status: o.status,
            result: o.result,
            started_at: o.started_at.map(time),
            finished_at: o.finished_at.map(time),
            // Milliseconds from the first entry to the last: never negative, never NaN.
            duration: o
                .duration_seconds
                .and_then(|s| Duration::try_from_secs_f64(s).ok()),
        }
    }
}

impl From<replay::TaskReplay> for TaskReplay {
    fn from(r: replay::TaskReplay) -> Self {
        TaskReplay {
            task_id: r.task_id,
            timeline: r.timeline.into_iter().map(TimelineEntry::from).collect(),
            agents: r.agents,
            key_facts: r.key_facts,
            key_conversations: r.key_conversations.into_iter().collect(),
            outcome: r.outcome.into(),
        }
    }
}

impl From<replay::TaskComparison> for TaskComparison {
    fn from(c: replay::TaskComparison) -> Self {
        TaskComparison {
            task_a: c.task_a,
            task_b: c.task_b,
            agents: c.agents,
            decision_points: c.decision_points,
            facts: c.facts,
            outcome_a: c.outcome_a.into(),
            outcome_b: c.outcome_b.into(),
            timeline_length_a: c.timeline_length_a,
            timeline_length_b: c.timeline_length_b,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use crate::{CreateOptions, HandoffError, NewFact, OpenOptions, Store};

    #[test]
    fn a_run_replayed_and_compared() {
        let clock = crate::ManualClock::new(None).unwrap();
        let store = Store::memory(OpenOptions {
            clock: Some(clock.clone()),
            ..OpenOptions::default()
        })
        .unwrap();
        let h = store
            .create(CreateOptions {
                task_id: "t1".into(),
                goal: "Fix the refresh".into(),
                from_agent: Some("claude".into()),
                to_agent: Some("gemini".into()),
                decisions: vec!["retry with backoff".into()],
                ..CreateOptions::default()
            })
            .unwrap();
        clock.advance(Duration::from_secs(30));
        let claim = store.claim(h.id, "gemini".into(), None).unwrap();
        clock.advance(Duration::from_secs(30));
        store
            .complete(claim.reference(), "retried".into(), None)
            .unwrap();
        store
            .add_facts(
                "task/t1/gemini".into(),
                vec![NewFact {
                    text: "refresh needs backoff".into(),
                    confidence: None,
                    source: None,
                }],
            )
            .unwrap();
        let r = store.replay("t1".into(), false).unwrap();
        let kinds: Vec<&str> = r.timeline.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "handoff.created",
                "handoff.claimed",
                "handoff.completed",
                "curation.facts_added"
            ]
        );
        let data: serde_json::Value = serde_json::from_str(&r.timeline[2].data).unwrap();
        assert_eq!(data["outcome"], "retried");
        assert_eq!(r.outcome.status, "completed");
        assert_eq!(r.outcome.duration, Some(Duration::from_secs(60)));
        assert_eq!(r.key_facts.len(), 1);
        let gemini = r.agents.iter().find(|a| a.agent == "gemini").unwrap();
        assert_eq!(
            (gemini.claimed, gemini.completed, gemini.curated),
            (1, 1, 1)
        );

        let c = store.compare("t1".into(), "t1".into()).unwrap();
        assert_eq!(c.agents.both, ["claude", "gemini"]);
        assert_eq!(c.timeline_length_a, 4);
        assert!(matches!(
            store.replay("nothing".into(), false),
            Err(HandoffError::NotFound { .. })
        ));
    }
}
