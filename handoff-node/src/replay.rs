//! Task replay and run comparison (DESIGN §9, the core's [`handoff_core::replay`]): a task's
//! run as one timeline, what each agent did, its key knowledge and how it ended, and two runs
//! side by side, as plain objects in the seed's snake_case, the way the core writes them.
//! `replay` and `compare` are entries of the store's operation table (`src/store.rs`).

use handoff_core::replay::{
    AgentContribution, Overlap, TaskComparison, TaskOutcome, TaskReplay, TimelineEntry,
};
use napi_derive::napi;
use serde::Serialize;
use serde_json::Value;

use crate::curation::{JsConversation, JsFact};
use crate::record::iso;
use crate::task::Mirror;
use crate::tasks::number;

/// One thing that happened to a task, whichever log it came from.
#[napi(
    object,
    js_name = "TimelineEntry",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsTimelineEntry {
    /// When (ISO 8601).
    pub at: String,
    /// What: `handoff.<kind>` (`handoff.created`, `handoff.claimed`, ...), `task.<kind>`
    /// (`task.step_started`, ...) or `curation.<kind>` (`curation.facts_added`, ...).
    #[napi(js_name = "type", ts_type = "TimelineEntryType")]
    #[serde(rename = "type")]
    pub kind: String,
    /// Who did it (`null` for the clock, or a caller that gave no name).
    pub agent: Option<String>,
    /// One line on it.
    pub summary: String,
    /// Its ids and values, as its log holds them (snake_case).
    #[napi(ts_type = "JsonValue")]
    pub data: Value,
}

impl Mirror for TimelineEntry {
    type Out = JsTimelineEntry;
    fn mirror(self) -> JsTimelineEntry {
        // Destructured in full: a field the core adds fails to compile here until it is mapped.
        let TimelineEntry {
            at,
            kind,
            agent,
            summary,
            data,
        } = self;
        JsTimelineEntry {
            at: iso(at),
            kind,
            agent,
            summary,
            data,
        }
    }
}

/// What one agent did in a task.
#[napi(
    object,
    js_name = "AgentContribution",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsAgentContribution {
    /// The agent.
    pub agent: String,
    /// Its role, as it said when it joined the task (`joinTask`); `null` when it gave none.
    pub role: Option<String>,
    /// Handoffs it created.
    #[napi(js_name = "handed_off")]
    pub handed_off: f64,
    /// Handoffs (or steps) it took.
    pub claimed: f64,
    /// Handoffs it completed.
    pub completed: f64,
    /// Attempts of its that failed.
    pub failed: f64,
    /// Curation changes on its branch (conversations, picks, facts, verifications, merges).
    pub curated: f64,
    /// Its first entry (ISO 8601).
    #[napi(js_name = "first_at")]
    pub first_at: Option<String>,
    /// Its last entry (ISO 8601).
    #[napi(js_name = "last_at")]
    pub last_at: Option<String>,
}

impl Mirror for AgentContribution {
    type Out = JsAgentContribution;
    fn mirror(self) -> JsAgentContribution {
        let AgentContribution {
            agent,
            role,
            handed_off,
            claimed,
            completed,
            failed,
            curated,
            first_at,
            last_at,
        } = self;
        JsAgentContribution {
            agent,
            role,
            handed_off: number(handed_off),
            claimed: number(claimed),
            completed: number(completed),
            failed: number(failed),
            curated: number(curated),
            first_at: first_at.map(iso),
            last_at: last_at.map(iso),
        }
    }
}

/// How a run ended, or stands.
#[napi(
    object,
    js_name = "TaskOutcome",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsTaskOutcome {
    /// The task's status when it has a plan; otherwise `completed` once a handoff completed
    /// and nothing is left open, `failed` after a final failure, else `in_progress`.
    #[napi(ts_type = "TaskStatus")]
    pub status: String,
    /// The last completion's outcome, as its holder wrote it.
    pub result: Option<String>,
    /// The first entry (ISO 8601).
    #[napi(js_name = "started_at")]
    pub started_at: Option<String>,
    /// The last entry (ISO 8601).
    #[napi(js_name = "finished_at")]
    pub finished_at: Option<String>,
    /// From the first entry to the last, in seconds.
    #[napi(js_name = "duration_seconds")]
    pub duration_seconds: Option<f64>,
}

impl Mirror for TaskOutcome {
    type Out = JsTaskOutcome;
    fn mirror(self) -> JsTaskOutcome {
        let TaskOutcome {
            status,
            result,
            started_at,
            finished_at,
            duration_seconds,
        } = self;
        JsTaskOutcome {
            status,
            result,
            started_at: started_at.map(iso),
            finished_at: finished_at.map(iso),
            duration_seconds,
        }
    }
}

/// A task's whole run: what `replay` returns.
#[napi(
    object,
    js_name = "TaskReplay",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsTaskReplay {
    /// The task.
    #[napi(js_name = "task_id")]
    pub task_id: String,
    /// Every entry of its logs (its handoffs' events, its plan's log, its curation log),
    /// oldest first; entries at the same instant in their log's order.
    pub timeline: Vec<JsTimelineEntry>,
    /// Each agent's contribution, by name.
    pub agents: Vec<JsAgentContribution>,
    /// Its verified facts (and, unless `verifiedOnly`, those not verified yet), oldest first.
    #[napi(js_name = "key_facts")]
    pub key_facts: Vec<JsFact>,
    /// Its verified or cherry-picked conversations (and, unless `verifiedOnly`, those not
    /// verified yet).
    #[napi(js_name = "key_conversations")]
    pub key_conversations: Vec<JsConversation>,
    /// How it ended.
    pub outcome: JsTaskOutcome,
}

impl Mirror for TaskReplay {
    type Out = JsTaskReplay;
    fn mirror(self) -> JsTaskReplay {
        let TaskReplay {
            task_id,
            timeline,
            agents,
            key_facts,
            key_conversations,
            outcome,
        } = self;
        JsTaskReplay {
            task_id,
            timeline: timeline.mirror(),
            agents: agents.mirror(),
            key_facts: key_facts.mirror(),
            key_conversations: key_conversations.mirror(),
            outcome: outcome.mirror(),
        }
    }
}

/// What two runs share and what only one holds.
#[napi(
    object,
    js_name = "Overlap",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsOverlap {
    /// Only in the first run.
    #[napi(js_name = "only_a")]
    pub only_a: Vec<String>,
    /// Only in the second.
    #[napi(js_name = "only_b")]
    pub only_b: Vec<String>,
    /// In both.
    pub both: Vec<String>,
}

impl Mirror for Overlap {
    type Out = JsOverlap;
    fn mirror(self) -> JsOverlap {
        let Overlap {
            only_a,
            only_b,
            both,
        } = self;
        JsOverlap {
            only_a,
            only_b,
            both,
        }
    }
}

/// Two runs side by side (an original and its rerun): what `compare` returns.
#[napi(
    object,
    js_name = "TaskComparison",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsTaskComparison {
    /// The first task.
    #[napi(js_name = "task_a")]
    pub task_a: String,
    /// The second.
    #[napi(js_name = "task_b")]
    pub task_b: String,
    /// The agents that took part.
    pub agents: JsOverlap,
    /// The decisions recorded: the handoffs' `decisions` and the messages of their
    /// decision-point picks.
    #[napi(js_name = "decision_points")]
    pub decision_points: JsOverlap,
    /// Their key facts, by text.
    pub facts: JsOverlap,
    /// How the first ended.
    #[napi(js_name = "outcome_a")]
    pub outcome_a: JsTaskOutcome,
    /// How the second ended.
    #[napi(js_name = "outcome_b")]
    pub outcome_b: JsTaskOutcome,
    /// Entries in the first timeline.
    #[napi(js_name = "timeline_length_a")]
    pub timeline_length_a: f64,
    /// Entries in the second.
    #[napi(js_name = "timeline_length_b")]
    pub timeline_length_b: f64,
}

impl Mirror for TaskComparison {
    type Out = JsTaskComparison;
    fn mirror(self) -> JsTaskComparison {
        let TaskComparison {
            task_a,
            task_b,
            agents,
            decision_points,
            facts,
            outcome_a,
            outcome_b,
            timeline_length_a,
            timeline_length_b,
        } = self;
        JsTaskComparison {
            task_a,
            task_b,
            agents: agents.mirror(),
            decision_points: decision_points.mirror(),
            facts: facts.mirror(),
            outcome_a: outcome_a.mirror(),
            outcome_b: outcome_b.mirror(),
            timeline_length_a: number(timeline_length_a),
            timeline_length_b: number(timeline_length_b),
        }
    }
}
